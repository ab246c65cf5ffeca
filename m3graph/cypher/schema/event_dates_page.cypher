// mode: read
// params: after, n
// returns: memory_id, text, started_at
// Migration 12: one page of memories in memory_id order (a seek on the memory_key constraint's index, so every
// page reads $n memories whatever the graph's size), each with its clip's date when the memory is a chat
// session's and can hold time notes (started_at is null otherwise: the caller skips it, the cursor moves on).
MATCH (m:Memory)
WHERE m.memory_id > $after
WITH m ORDER BY m.memory_id LIMIT $n
OPTIONAL MATCH (c:Clip {clip_key: m.video_id + '#' + toString(m.clip_index)})
RETURN m.memory_id AS memory_id, m.text AS text,
       CASE WHEN c.kind = 'session' AND NOT m.is_equivalence THEN c.started_at END AS started_at
ORDER BY memory_id
