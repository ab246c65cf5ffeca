// mode: read
// params: videos, before_clip, name, sha256, limit
// returns: source_id, clip_index, sha256, name, kind, mime, stored, memory_ids, faces
// One file shared in a question's scope, named by the name it was shared under or by its key (the latest share
// when several match): its stored copy, its surrogate memories in order (at most $limit) and the face entities
// those memories mention (a photo's faces), for the reader's closer look.
MATCH (c:Clip)-[h:HAS_FILE]->(f:File)
WHERE ($videos IS NULL OR c.video_id IN $videos)
  AND ($before_clip IS NULL OR c.clip_index <= $before_clip)
  AND (($name IS NOT NULL AND toLower(h.name) = $name) OR ($sha256 IS NOT NULL AND f.sha256 = $sha256))
WITH c, h, f
ORDER BY coalesce(h.shared_at, c.started_at) DESC, c.clip_index DESC
LIMIT 1
RETURN c.video_id AS source_id, c.clip_index AS clip_index, f.sha256 AS sha256, h.name AS name, h.kind AS kind,
       f.mime AS mime, f.stored AS stored,
       COLLECT { MATCH (m:Memory {video_id: c.video_id})-[:DESCRIBES]->(f)
                 RETURN m.memory_id ORDER BY m.clip_index, m.order_in_clip LIMIT $limit } AS memory_ids,
       COLLECT { MATCH (m:Memory {video_id: c.video_id})-[:DESCRIBES]->(f)
                 MATCH (m)-[:MENTIONS]->(x:Face)
                 OPTIONAL MATCH (x)-[:IS]->(ch:Character)
                 RETURN DISTINCT {face: x.entity_id, char_id: ch.char_id} } AS faces
