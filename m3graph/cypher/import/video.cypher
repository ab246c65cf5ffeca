// mode: write
// params: source_id, source, format
// Provenance of an imported video (its clips were created by graph/upsert_clip in the same transaction).
MATCH (v:Video {video_id: $source_id})
SET v.imported_from = $source, v.import_format = $format, v.imported_at = datetime()
