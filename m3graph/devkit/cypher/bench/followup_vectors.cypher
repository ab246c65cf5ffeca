// mode: read
// params: ids
// returns: memory_id, embedding
// The text vectors of a first search's top memories: the "feedback" follow-up moves the query towards them
// (bench/search_followup.py).
UNWIND $ids AS id
MATCH (m:Memory {memory_id: id})
WHERE m.embedding IS NOT NULL
RETURN m.memory_id AS memory_id, m.embedding AS embedding
