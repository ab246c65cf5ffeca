// mode: read
// params: after, n
// returns: memory_id, source_id, text
// Migration 13: one page of semantic statements (not equivalences) in memory_id order, for their slots.
MATCH (m:Memory)
WHERE m.memory_id > $after
WITH m ORDER BY m.memory_id LIMIT $n
RETURN m.memory_id AS memory_id, m.video_id AS source_id,
       CASE WHEN m.kind = 'semantic' AND NOT coalesce(m.is_equivalence, false) THEN m.text END AS text
ORDER BY memory_id
