// mode: write
// params: rows, model
// New vectors for a batch of memories, each marked with the model that produced it.
UNWIND $rows AS r
MATCH (m:Memory {memory_id: r.memory_id})
SET m.embedding = r.embedding, m.embedding_model = $model
