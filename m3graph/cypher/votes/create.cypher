// mode: write
// params: vote_id, a, b, verdict, note, source
// returns: vote_id, a, b, verdict, note, source, created_at
// A manual identity vote is a node (not a property on SAME_AS) so that its time, note and undo survive as
// history, and so that it can join any two entity kinds (face, voice, speaker). The pair is stored ordered.
CALL () {
  MATCH (e) WHERE (e:Face OR e:Voice OR e:Speaker) AND e.entity_id IN [$a, $b]
  RETURN collect(e) AS found
}
WITH found WHERE size(found) = 2
CREATE (v:IdentityVote {vote_id: $vote_id, a: $a, b: $b, verdict: $verdict, note: $note, source: $source,
                        created_at: datetime()})
WITH v, found
UNWIND found AS e
CREATE (v)-[:ABOUT]->(e)
WITH DISTINCT v
RETURN v.vote_id AS vote_id, v.a AS a, v.b AS b, v.verdict AS verdict, v.note AS note, v.source AS source,
       toString(v.created_at) AS created_at
