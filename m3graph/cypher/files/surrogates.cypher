// mode: read
// params: sha256, limit
// returns: sha256, name, kind, mime, size, shared_at, shares, memories, total
// One file's reference, where it was shared, and the text that stands for it: its surrogate memories (DESCRIBES)
// in their order, at most $limit of them (total says how many there are). Never its bytes.
MATCH (f:File {sha256: $sha256})
RETURN f.sha256 AS sha256, f.name AS name, f.kind AS kind, f.mime AS mime, f.size AS size, f.shared_at AS shared_at,
       COLLECT { MATCH (c:Clip)-[h:HAS_FILE]->(f)
                 RETURN {video: c.video_id, clip: c.clip_index, turn_id: h.turn_id, name: h.name,
                         shared_at: h.shared_at} AS s ORDER BY s.video, s.clip, s.turn_id } AS shares,
       COLLECT { MATCH (m:Memory)-[:DESCRIBES]->(f)
                 RETURN {memory_id: m.memory_id, video: m.video_id, order: m.order_in_clip, text: m.text} AS d
                 ORDER BY d.video, d.order LIMIT $limit } AS memories,
       COUNT { (:Memory)-[:DESCRIBES]->(f) } AS total
