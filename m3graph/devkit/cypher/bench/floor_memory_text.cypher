// mode: write
// params: rows
// Commit floor (bench/write_profile.py): Memory nodes with text but no vector: the commit updates the range and
// full-text indexes of Memory (memory_text, memory_text_en), not the vector index.
UNWIND $rows AS r
CREATE (:Memory {memory_id: r.memory_id, text: r.text, video_id: r.source_id, clip_index: 0, kind: 'semantic',
                 is_equivalence: false})
