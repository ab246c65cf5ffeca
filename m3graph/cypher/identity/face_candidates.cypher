// mode: read
// params: queries, k
// returns: label, entity_id, centroid, exemplars, quality, obs
// Top-K by the vector index on the unit centroid; the caller reranks exactly with the stored centroid.
UNWIND $queries AS q
CALL db.index.vector.queryNodes('face_centroid', $k, q.unit) YIELD node, score
RETURN q.label AS label, node.entity_id AS entity_id, node.centroid AS centroid,
       node.exemplars AS exemplars, node.exemplar_quality AS quality, node.exemplar_obs AS obs
