// mode: schema
// params: dim, quantization, hnsw_m, ef_construction
CREATE VECTOR INDEX face_centroid IF NOT EXISTS FOR (n:Face) ON n.centroid_unit
OPTIONS {indexConfig: {
  `vector.dimensions`: $dim,
  `vector.similarity_function`: 'cosine',
  `vector.quantization.enabled`: $quantization,
  `vector.hnsw.m`: $hnsw_m,
  `vector.hnsw.ef_construction`: $ef_construction
}}
