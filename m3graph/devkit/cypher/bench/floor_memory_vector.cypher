// mode: write
// params: rows
// Commit floor (bench/write_profile.py): Memory nodes with a vector but no text: the commit updates the range
// indexes and the vector index (memory_embedding), not the full-text ones.
UNWIND $rows AS r
CREATE (:Memory {memory_id: r.memory_id, embedding: r.embedding, video_id: r.source_id, clip_index: 0,
                 kind: 'semantic', is_equivalence: false})
