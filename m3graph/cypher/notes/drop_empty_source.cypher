// mode: write
// params: source_id
// A notes source claimed for a note whose write then failed: removed again while it holds no clip, so a refused
// note leaves no empty source behind.
MATCH (v:Video {video_id: $source_id})
WHERE v.agent_notes AND NOT EXISTS { (:Clip)-[:OF]->(v) }
DETACH DELETE v
