// mode: read
// params: source_id
// returns: memory_id, clip_index, text, source_ids, embedding
// Every searchable memory of one video with its vector: the baselines of `m3graph eval retrieval` (BM25, exact
// cosine) rank exactly what the product searches (search/ranked: no equivalence line, no speaker's own name fact).
MATCH (m:Memory {video_id: $source_id})
WHERE NOT m.is_equivalence AND NOT coalesce(m.slot_key ENDS WITH ' · name' AND m.slot_value = m.slot_subject, false)
RETURN m.memory_id AS memory_id, m.clip_index AS clip_index, m.text AS text, m.source_ids AS source_ids,
       m.embedding AS embedding
ORDER BY clip_index, memory_id
