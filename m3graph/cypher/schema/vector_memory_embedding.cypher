// mode: schema
// params: dim, quantization, hnsw_m, ef_construction
CREATE VECTOR INDEX memory_embedding IF NOT EXISTS FOR (n:Memory) ON n.embedding
OPTIONS {indexConfig: {
  `vector.dimensions`: $dim,
  `vector.similarity_function`: 'cosine',
  `vector.quantization.enabled`: $quantization,
  `vector.hnsw.m`: $hnsw_m,
  `vector.hnsw.ef_construction`: $ef_construction
}}
