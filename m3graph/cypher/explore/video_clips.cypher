// mode: read
// params: source_id
// returns: clip_index, start_s, end_s, started_at, state, reason, uri, memories, faces, voices, speakers, first
// A source's timeline: per clip its progress state, how much memory it holds and who was seen or heard.
// `state` is the clip state machine's; older graphs only have `status`.
MATCH (c:Clip {video_id: $source_id})
RETURN c.clip_index AS clip_index, c.start_s AS start_s, c.end_s AS end_s, c.started_at AS started_at,
       coalesce(c.state, c.status) AS state, coalesce(c.state_reason, c.status_detail) AS reason, c.uri AS uri,
       COUNT { MATCH (m:Memory)-[:IN_CLIP]->(c) } AS memories,
       COLLECT { MATCH (:FaceObs {video_id: $source_id, clip_index: c.clip_index})-[:OF]->(f:Face)
                 RETURN DISTINCT f.entity_id } AS faces,
       COLLECT { MATCH (:Utterance {video_id: $source_id, clip_index: c.clip_index})-[:OF]->(v:Voice)
                 RETURN DISTINCT v.entity_id } AS voices,
       COLLECT { MATCH (m:Memory)-[:IN_CLIP]->(c) MATCH (m)-[:MENTIONS]->(s:Speaker)
                 RETURN DISTINCT s.entity_id } AS speakers,
       COLLECT { MATCH (m:Memory)-[:IN_CLIP]->(c) WHERE NOT m.is_equivalence
                 RETURN m.text ORDER BY m.order_in_clip LIMIT 1 } AS first
ORDER BY clip_index
