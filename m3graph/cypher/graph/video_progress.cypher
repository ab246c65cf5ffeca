// mode: read
// params: video_id
// returns: clip_index, status, status_ms
// Per-clip commit status of one video: the commit task's order check (every earlier clip `done`) and the CLI.
// status_ms (epoch milliseconds of the last status change) shows the order in which clips were committed.
MATCH (c:Clip {video_id: $video_id})
RETURN c.clip_index AS clip_index, c.status AS status, c.status_at.epochMillis AS status_ms ORDER BY clip_index
