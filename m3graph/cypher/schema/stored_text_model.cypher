// mode: read
// returns: embedded, model
// A graph from before the mark: whether any memory has a vector, and the model `reembed` marked one with (if any).
OPTIONAL MATCH (m:Memory) WHERE m.embedding IS NOT NULL
WITH m LIMIT 1
RETURN m IS NOT NULL AS embedded, m.embedding_model AS model
