// mode: write
// params: votes
// returns: face_id, voice_id, votes
// Face–voice votes from imported equivalence statements. Each vote is one evidence string that starts with
// the statement's clip key ('<clip>|import:<node>:<k>'), so delete/clip withdraws them with the clip and
// memory/votes (exact 'clip|source' strings) never touches them.
UNWIND $votes AS x
MATCH (f:Face {entity_id: x.face_id}), (v:Voice {entity_id: x.voice_id})
MERGE (f)-[r:SAME_AS]->(v)
ON CREATE SET r.evidence = [], r.first_clip = x.first_clip, r.created_at = datetime()
SET r.evidence = r.evidence + [ev IN x.evidence WHERE NOT ev IN r.evidence]
SET r.votes = size(r.evidence), r.last_clip = x.last_clip
RETURN f.entity_id AS face_id, v.entity_id AS voice_id, r.votes AS votes
