// mode: read
// params: source_id
// returns: clip_index, state, reason, state_ms
// Every clip of one video with its progress, in clip order: the CLI, the workers' order check, MCP and the
// explorer read this. state_ms (epoch milliseconds of the last change) shows the order work finished in.
// Clips written before states existed carry `status` ('done' = memorized); imported clips carry neither.
MATCH (c:Clip {video_id: $source_id})
RETURN c.clip_index AS clip_index,
       coalesce(c.state, CASE c.status WHEN 'done' THEN 'memorized' ELSE c.status END) AS state,
       coalesce(c.state_reason, c.status_detail) AS reason,
       coalesce(c.state_at, c.status_at).epochMillis AS state_ms
ORDER BY clip_index
