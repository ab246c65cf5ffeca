// mode: read
// params: query, n, videos, before_clip, entity_ids, exclude, min_score, k
// returns: source_id, clip_index, score
// Approximate clip ranking through the vector index: the top $n memories, filtered, grouped by clip.
CALL db.index.vector.queryNodes('memory_embedding', $n, $query) YIELD node AS m, score
WITH m, score
WHERE ($videos IS NULL OR m.video_id IN $videos) AND ($before_clip IS NULL OR m.clip_index <= $before_clip)
  AND NOT m.is_equivalence AND ($entity_ids IS NULL OR any(e IN m.entity_ids WHERE e IN $entity_ids))
WITH m.video_id AS source_id, m.clip_index AS clip_index, max(score) AS score
WHERE score >= $min_score AND NOT (source_id + '#' + toString(clip_index)) IN $exclude
RETURN source_id, clip_index, score
ORDER BY score DESC, source_id, clip_index
LIMIT $k
