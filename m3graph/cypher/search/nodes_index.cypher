// mode: read
// params: query, n, videos, before_clip, entity_ids, k
// returns: memory_id, score
CALL db.index.vector.queryNodes('memory_embedding', $n, $query) YIELD node AS m, score
WITH m, score
WHERE ($videos IS NULL OR m.video_id IN $videos) AND ($before_clip IS NULL OR m.clip_index <= $before_clip)
  AND NOT m.is_equivalence AND ($entity_ids IS NULL OR any(e IN m.entity_ids WHERE e IN $entity_ids))
RETURN m.memory_id AS memory_id, score
ORDER BY score DESC, memory_id
LIMIT $k
