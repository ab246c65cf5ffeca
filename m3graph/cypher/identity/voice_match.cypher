// mode: write
// params: video_id, clip_index, queries, k, threshold, prune_below
// returns: clip_found, done, scores
// Every input of a voice resolution's decision in one round trip (issue 12); nothing here returns a vector.
// 1. The clip must exist; if it does not, nothing else runs (the caller raises NotFoundError).
// 2. The lock `identity:voice` (graph/lock.cypher): a write lock on a named node until the transaction ends, taken
//    before anything is read, so that concurrent workers decide one after the other as a sequential run would.
// 3. `done`: a clip already resolved keeps its mapping (identity/voice_resolved.cypher, same index hint); the
//    caller returns it and writes nothing.
// 4. Otherwise `scores`: per cluster (q: label, unit = the unit query mean, mean = the mean of the cluster's top
//    unit exemplars), the top-k entities of the vector index on the unit centroid, reranked exactly. The reference
//    score (mean pairwise cosine between the cluster's and the entity's exemplars) equals mean · centroid (the
//    stored mean of the entity's unit exemplars), summed here in double precision (the float32 index score, and
//    vector.similarity.cosine, are off by ~1e-8 and would move decisions at the threshold); only scores >=
//    $threshold are returned, the candidates below it could never be chosen.
// 5. Pruning before the exact sum: mean · centroid = |mean| |centroid| cos, both norms <= 1, so for cos >= 0 the
//    exact score never exceeds the index's cosine (2 × score − 1). A candidate whose cosine is under a positive
//    threshold can never be chosen, and its exact sum (one term per dimension) is skipped: k can then be large
//    enough for the HNSW search to find a returning person among 10^5 entities (identity.candidates).
//    $prune_below is the threshold minus 1e-6 (float32 index scores), or null where that bound does not hold
//    (quantized index, threshold <= 0).
OPTIONAL MATCH (clip:Clip {clip_key: $video_id + '#' + toString($clip_index)})
CALL (clip) {
  WITH clip WHERE clip IS NOT NULL
  MERGE (l:Lock {name: 'identity:voice'})
  SET l.touched_at = timestamp()
}
CALL (clip) {
  WITH clip WHERE clip IS NOT NULL
  MATCH (o:Utterance {video_id: $video_id, clip_index: $clip_index})-[:OF]->(e:Voice)
  USING INDEX o:Utterance(video_id, clip_index)
  WITH DISTINCT o.cluster_label AS label, e.entity_id AS entity_id
  RETURN collect({label: label, entity_id: entity_id}) AS done
}
CALL (clip, done) {
  WITH clip, done WHERE clip IS NOT NULL AND size(done) = 0
  UNWIND $queries AS q
  CALL db.index.vector.queryNodes('voice_centroid', $k, q.unit) YIELD node, score AS index_score
  WITH q, node WHERE $prune_below IS NULL OR 2.0 * index_score - 1.0 >= $prune_below
  WITH q.label AS label, q.mean AS mean, node.entity_id AS entity_id, node.centroid AS centroid
  WITH label, entity_id, reduce(s = 0.0, i IN range(0, size(mean) - 1) | s + mean[i] * centroid[i]) AS score
  WHERE score >= $threshold
  RETURN collect({label: label, entity_id: entity_id, score: score}) AS scores
}
RETURN clip IS NOT NULL AS clip_found, done, scores
