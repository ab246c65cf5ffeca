// mode: read
// params: entity_ids, videos, before_clip, k
// returns: memory_id
// Character → names and attributes: the semantic memories that mention the character, best supported first.
MATCH (m:Memory)-[:MENTIONS]->(e)
WHERE e.entity_id IN $entity_ids AND m.kind = 'semantic' AND NOT m.is_equivalence
  AND ($videos IS NULL OR m.video_id IN $videos) AND ($before_clip IS NULL OR m.clip_index <= $before_clip)
WITH DISTINCT m
RETURN m.memory_id AS memory_id
ORDER BY m.support DESC, m.video_id, m.clip_index, m.order_in_clip
LIMIT $k
