// mode: read
// params: source_id
// returns: clip_index, turn_id, sha256, name, kind, mime, size, stored, shared_at, surrogates
// A conversation's files by session, with how many surrogate memories describe each.
MATCH (c:Clip {video_id: $source_id})-[h:HAS_FILE]->(f:File)
RETURN c.clip_index AS clip_index, h.turn_id AS turn_id, f.sha256 AS sha256, h.name AS name, h.kind AS kind,
       f.mime AS mime, f.size AS size, f.stored AS stored, h.shared_at AS shared_at,
       COUNT { (m:Memory {video_id: $source_id})-[:DESCRIBES]->(f) } AS surrogates
ORDER BY clip_index, turn_id, name
