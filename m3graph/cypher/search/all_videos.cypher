// mode: read
// returns: source_id
MATCH (v:Video) RETURN v.video_id AS source_id ORDER BY source_id
