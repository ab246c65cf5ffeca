// mode: write
// params: rows
// Migration 17: a source written before sources were named gets its `Source` label, `source_id` (its video_id)
// and `kind`.
UNWIND $rows AS r
MATCH (v:Video {video_id: r.video_id})
SET v:Source, v.source_id = r.video_id, v.kind = r.kind
