// mode: read
// params: items, k, min_score, source_id
// returns: item, memory_id, score, slot_key, subject_key, value_key, negated, changed
// Semantic dedup through the vector index, within the video (memory is scoped per video as in the
// reference): same kind of statement, mentioning every entity the new one mentions (all of them, not just
// the first as in the reference).
UNWIND $items AS item
CALL db.index.vector.queryNodes('memory_embedding', $k, item.embedding) YIELD node AS m, score
WITH item, m, score
WHERE score >= $min_score AND m.kind = 'semantic' AND m.is_equivalence = item.is_equivalence
  AND all(e IN item.entity_ids WHERE e IN m.entity_ids)
  AND m.video_id = $source_id AND (size(item.entity_ids) > 0 OR size(m.entity_ids) = 0)
RETURN item.idx AS item, m.memory_id AS memory_id, score, m.slot_key AS slot_key, m.subject_key AS subject_key,
       m.value_key AS value_key,
       m.negated AS negated, m.changed AS changed
ORDER BY item, score DESC
