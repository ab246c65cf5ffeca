// mode: read
// params: video_id
// returns: video_id
MATCH (v:Video {video_id: $video_id}) RETURN v.video_id AS video_id
