// mode: read
// params: items, min_score, source_id
// returns: item, memory_id, score, slot_key, subject_key, value_key, negated, changed
// Exact variant of dedup_candidates for videos with few semantic memories (the usual case): no global
// top-K cut-off can hide a duplicate behind other videos' similar memories. The hint keeps the read per video
// (the `kind` index would read every video's semantic memories; see tests/graph/test_query_plans.py).
MATCH (m:Memory {video_id: $source_id}) USING INDEX m:Memory(video_id)
WHERE m.kind = 'semantic'
UNWIND $items AS item
WITH item, m, vector.similarity.cosine(m.embedding, item.embedding) AS score
WHERE score >= $min_score AND m.is_equivalence = item.is_equivalence
  AND all(e IN item.entity_ids WHERE e IN m.entity_ids)
  AND (size(item.entity_ids) > 0 OR size(m.entity_ids) = 0)
RETURN item.idx AS item, m.memory_id AS memory_id, score, m.slot_key AS slot_key, m.subject_key AS subject_key,
       m.value_key AS value_key,
       m.negated AS negated, m.changed AS changed
ORDER BY item, score DESC, memory_id
