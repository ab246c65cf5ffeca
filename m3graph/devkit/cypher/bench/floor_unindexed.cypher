// mode: write
// params: rows
// Commit floor (bench/write_profile.py): nodes with a memory's properties under a label no index covers, so the
// commit pays the log force and the store only; beside floor_memory* it says what the memory indexes cost.
UNWIND $rows AS r
CREATE (:BenchFloor {memory_id: r.memory_id, text: r.text, embedding: r.embedding, video_id: r.source_id,
                     clip_index: 0, kind: 'semantic', is_equivalence: false})
