// mode: read
// returns: video_id
MATCH (v:Video) RETURN v.video_id AS video_id ORDER BY video_id
