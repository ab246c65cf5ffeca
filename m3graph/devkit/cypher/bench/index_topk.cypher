// mode: read
// params: query, k
// returns: memory_id, score
// The raw top k of the memory vector index, unfiltered: what recall@k of the index is measured on.
CALL db.index.vector.queryNodes('memory_embedding', $k, $query) YIELD node, score
RETURN node.memory_id AS memory_id, score
ORDER BY score DESC
