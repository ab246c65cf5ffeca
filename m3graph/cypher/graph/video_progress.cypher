// mode: read
// params: source_id
// returns: clip_index, status, status_ms
// Per-clip completion of one video for readers that only ask "is it finished" (eval coverage): status is
// 'done' once the clip is memorized, else its state (m3graph/graphdb/clip_state.py owns states; clip/states
// is the full view). Clips written before states existed carry `status` itself.
MATCH (c:Clip {video_id: $source_id})
WITH c, coalesce(c.state, c.status) AS state
RETURN c.clip_index AS clip_index, CASE state WHEN 'memorized' THEN 'done' ELSE state END AS status,
       coalesce(c.state_at, c.status_at).epochMillis AS status_ms
ORDER BY clip_index
