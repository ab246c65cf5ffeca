// mode: read
// params: video_id
// returns: clip_index, status
MATCH (c:Clip {video_id: $video_id})
RETURN c.clip_index AS clip_index, c.status AS status ORDER BY clip_index
