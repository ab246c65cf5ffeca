// mode: write
// params: rows
// Commit floor (bench/write_profile.py): Memory nodes with text and a vector: every Memory index is updated, as
// by a clip write or an import, without the rest of their statements.
UNWIND $rows AS r
CREATE (:Memory {memory_id: r.memory_id, text: r.text, embedding: r.embedding, video_id: r.source_id,
                 clip_index: 0, kind: 'semantic', is_equivalence: false})
