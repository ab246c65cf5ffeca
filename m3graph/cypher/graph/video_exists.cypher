// mode: read
// params: source_id
// returns: source_id
MATCH (v:Video {video_id: $source_id}) RETURN v.video_id AS source_id
