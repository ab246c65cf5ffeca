// mode: read
// params: model, after, k
// returns: memory_id, text
// The next batch of memories not yet embedded by $model, in memory_id order after the cursor (resumable).
MATCH (m:Memory)
WHERE m.memory_id > $after AND coalesce(m.embedding_model, '') <> $model
RETURN m.memory_id AS memory_id, m.text AS text
ORDER BY memory_id
LIMIT $k
