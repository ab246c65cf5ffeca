// mode: read
// params: query, videos, before_clip, entity_ids, exclude, min_score, k
// returns: source_id, clip_index, score
// Exact clip ranking (clip score = best memory score) for small, filtered candidate sets.
MATCH (m:Memory)
WHERE m.video_id IN $videos AND ($before_clip IS NULL OR m.clip_index <= $before_clip) AND NOT m.is_equivalence
  AND ($entity_ids IS NULL OR any(e IN m.entity_ids WHERE e IN $entity_ids))
WITH m.video_id AS source_id, m.clip_index AS clip_index, max(vector.similarity.cosine(m.embedding, $query)) AS score
WHERE score >= $min_score AND NOT (source_id + '#' + toString(clip_index)) IN $exclude
RETURN source_id, clip_index, score
ORDER BY score DESC, source_id, clip_index
LIMIT $k
