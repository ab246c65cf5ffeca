// mode: schema
// params: dim, quantization, hnsw_m, ef_construction, search_expansion
// Neo4j 2026.x only (migration 8): the memory index carries the filter properties, so a Cypher 25
// `SEARCH m IN (VECTOR INDEX memory_embedding FOR $v WHERE m.video_id = $vid AND m.clip_index <= $c ...)`
// filters inside the index instead of after it. Quantization is set explicitly: new 2026 indexes default to it on.
// A top-k query explores ceil(k × search_expansion) candidates (settings.vector_index.search_expansion).
CYPHER 25
CREATE VECTOR INDEX memory_embedding IF NOT EXISTS FOR (n:Memory) ON n.embedding
WITH [n.video_id, n.clip_index, n.kind, n.is_equivalence]
OPTIONS {indexConfig: {
  `vector.dimensions`: $dim,
  `vector.similarity_function`: 'cosine',
  `vector.quantization.enabled`: $quantization,
  `vector.hnsw.m`: $hnsw_m,
  `vector.hnsw.ef_construction`: $ef_construction,
  `vector.default_search_expansion_factor`: $search_expansion
}}
