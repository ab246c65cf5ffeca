// mode: write
// params: vote_id
// returns: a, b, undone
// Undo keeps the vote node (history); only an active vote stops counting.
MATCH (v:IdentityVote {vote_id: $vote_id})
WITH v, v.undone_at IS NULL AS active
SET v.undone_at = coalesce(v.undone_at, datetime())
RETURN v.a AS a, v.b AS b, active AS undone
