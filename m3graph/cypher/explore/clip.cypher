// mode: read
// params: source_id, clip_index
// returns: source_id, clip_index, start_s, end_s, started_at, state, reason, uri, faces, voices
// One clip's header and the entities perceived in it (faces on screen, voices heard) with their characters.
MATCH (c:Clip {clip_key: $source_id + '#' + toString($clip_index)})
RETURN c.video_id AS source_id, c.clip_index AS clip_index, c.start_s AS start_s, c.end_s AS end_s,
       c.started_at AS started_at, coalesce(c.state, c.status) AS state,
       coalesce(c.state_reason, c.status_detail) AS reason, c.uri AS uri,
       COLLECT { MATCH (:FaceObs {video_id: $source_id, clip_index: $clip_index})-[:OF]->(f:Face)
                 OPTIONAL MATCH (f)-[:IS]->(ch:Character)
                 RETURN DISTINCT [f.entity_id, ch.char_id] } AS faces,
       COLLECT { MATCH (:Utterance {video_id: $source_id, clip_index: $clip_index})-[:OF]->(v:Voice)
                 OPTIONAL MATCH (v)-[:IS]->(ch:Character)
                 RETURN DISTINCT [v.entity_id, ch.char_id] } AS voices
