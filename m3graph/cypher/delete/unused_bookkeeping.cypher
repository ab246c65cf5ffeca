// mode: write
// returns: removed
// Lock and Counter nodes exist for the data: locks serialize writes to it, counters keep its ids unique. Once
// the graph holds no data at all they serve nothing, and the deletion that removed the last of it removes them
// too. While any data remains they all stay (a counter reset under remaining data would reuse its ids), and
// nothing is locked (the first check is a read). Only on an empty graph is each one write-locked and the check
// repeated, so a write or id allocation in flight commits first and keeps them.
WITH 1 AS one
WHERE NOT EXISTS {
  MATCH (x) WHERE x:Video OR x:Clip OR x:Memory OR x:Face OR x:Voice OR x:Speaker OR x:Character
                  OR x:IdentityVote OR x:FaceObs OR x:Utterance
}
MATCH (k) WHERE k:Lock OR k:Counter
SET k.swept_at = timestamp()
WITH collect(k) AS nodes
WHERE NOT EXISTS {
  MATCH (x) WHERE x:Video OR x:Clip OR x:Memory OR x:Face OR x:Voice OR x:Speaker OR x:Character
                  OR x:IdentityVote OR x:FaceObs OR x:Utterance
}
UNWIND nodes AS k
DETACH DELETE k
RETURN count(*) AS removed
