// mode: read
// params: source_id
// returns: clip_index
MATCH (c:Clip {video_id: $source_id}) RETURN c.clip_index AS clip_index ORDER BY clip_index
