// mode: read
// params: query, videos, before_clip, entity_ids, clips, min_score, k
// returns: rows
// Hybrid search's vector ranking for small filtered candidate sets: exact cosine (as (1+cos)/2), floored, best
// first, in one row (one record instead of hundreds: the driver's per-record cost dominated this query).
MATCH (m:Memory)
WHERE m.video_id IN $videos AND ($before_clip IS NULL OR m.clip_index <= $before_clip) AND NOT m.is_equivalence
  AND ($entity_ids IS NULL OR any(e IN m.entity_ids WHERE e IN $entity_ids))
  AND ($clips IS NULL OR (m.video_id + '#' + toString(m.clip_index)) IN $clips)
WITH m, vector.similarity.cosine(m.embedding, $query) AS score
WHERE score >= $min_score
WITH m, score
ORDER BY score DESC, m.memory_id
LIMIT $k
RETURN collect({memory_id: m.memory_id, video_id: m.video_id, clip_index: m.clip_index, order: m.order_in_clip,
                score: score}) AS rows
