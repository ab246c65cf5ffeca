// mode: write
// params: video_id, clip_index, status, detail
// Progress of ingestion per clip, visible to the CLI and to analysts browsing the graph.
MATCH (c:Clip {clip_key: $video_id + '#' + toString($clip_index)})
SET c.status = $status, c.status_detail = $detail, c.status_at = datetime()
