// mode: write
// params: votes
// returns: face_id, voice_id, votes
// Face–voice votes from imported equivalence statements. Each vote is one evidence string that starts with
// the statement's clip key ('<clip>|import:<node>:<k>'), and the clip lists the pair in `vote_pairs`, so delete/clip withdraws them with the clip and
// memory/votes (exact 'clip|source' strings) never touches them.
UNWIND $votes AS x
MATCH (f:Face {entity_id: x.face_id}), (v:Voice {entity_id: x.voice_id})
MERGE (f)-[r:SAME_AS]->(v)
ON CREATE SET r.evidence = [], r.first_clip = x.first_clip, r.created_at = datetime()
SET r.evidence = r.evidence + [ev IN x.evidence WHERE NOT ev IN r.evidence]
SET r.votes = size(r.evidence), r.last_clip = x.last_clip
WITH f, v, r, toString(x.face_id) + ':' + toString(x.voice_id) AS pair,
     [ev IN x.evidence | split(ev, '|')[0]] AS clip_keys
CALL (pair, clip_keys) {
  UNWIND clip_keys AS key
  WITH DISTINCT key
  MATCH (c:Clip {clip_key: key})
  SET c.vote_pairs = CASE WHEN pair IN coalesce(c.vote_pairs, []) THEN c.vote_pairs
                          ELSE coalesce(c.vote_pairs, []) + pair END
}
RETURN f.entity_id AS face_id, v.entity_id AS voice_id, r.votes AS votes
