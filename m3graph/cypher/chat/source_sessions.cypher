// mode: read
// params: source_id
// returns: clip_index, session_key, end_s
// The clips a source already has, with the session each one stores: ingestion skips those sessions and
// appends new ones after the last clip.
MATCH (c:Clip {video_id: $source_id})
RETURN c.clip_index AS clip_index, c.session_key AS session_key, c.end_s AS end_s
ORDER BY clip_index
