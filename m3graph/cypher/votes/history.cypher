// mode: read
// params: ids
// returns: vote_id, a, b, verdict, note, source, created_at, undone_at
MATCH (v:IdentityVote)
WHERE v.a IN $ids OR v.b IN $ids
RETURN v.vote_id AS vote_id, v.a AS a, v.b AS b, v.verdict AS verdict, v.note AS note, v.source AS source,
       toString(v.created_at) AS created_at, toString(v.undone_at) AS undone_at
ORDER BY vote_id
