// mode: read
// params: query, videos, before_clip, entity_ids, k
// returns: memory_id, score
MATCH (m:Memory)
WHERE m.video_id IN $videos AND ($before_clip IS NULL OR m.clip_index <= $before_clip) AND NOT m.is_equivalence
  AND ($entity_ids IS NULL OR any(e IN m.entity_ids WHERE e IN $entity_ids))
WITH m, vector.similarity.cosine(m.embedding, $query) AS score
RETURN m.memory_id AS memory_id, score
ORDER BY score DESC, memory_id
LIMIT $k
