// mode: read
// params: videos, before_clip, kinds, mimes, name, since, until, limit
// returns: source_id, clip_index, started_at, turn_id, sha256, name, kind, mime, size, shared_at, turn_memory, surrogates
// The files shared in a question's scope (its sources, up to its clip), filtered by kind or type (either list
// matches; both null: any), a name fragment (lowercase) and the time they were shared; each with the sharing
// turn's memory as evidence. Oldest share first, so "the first PDF" is the first row.
MATCH (c:Clip)-[h:HAS_FILE]->(f:File)
WHERE ($videos IS NULL OR c.video_id IN $videos)
  AND ($before_clip IS NULL OR c.clip_index <= $before_clip)
  AND (($kinds IS NULL AND $mimes IS NULL) OR h.kind IN coalesce($kinds, []) OR f.mime IN coalesce($mimes, []))
  AND ($name IS NULL OR toLower(h.name) CONTAINS $name)
  AND ($since IS NULL OR coalesce(h.shared_at, c.started_at) >= $since)
  AND ($until IS NULL OR coalesce(h.shared_at, c.started_at) < $until)
WITH c, h, f
ORDER BY coalesce(h.shared_at, c.started_at), c.video_id, c.clip_index, h.turn_id, h.name
LIMIT $limit
RETURN c.video_id AS source_id, c.clip_index AS clip_index, c.started_at AS started_at, h.turn_id AS turn_id,
       f.sha256 AS sha256, h.name AS name, h.kind AS kind, f.mime AS mime, f.size AS size,
       coalesce(h.shared_at, c.started_at) AS shared_at,
       COLLECT { MATCH (m:Memory {video_id: c.video_id})-[:SHARED {turn_id: h.turn_id}]->(f)
                 RETURN m.memory_id LIMIT 1 }[0] AS turn_memory,
       COUNT { (m:Memory {video_id: c.video_id})-[:DESCRIBES]->(f) } AS surrogates
