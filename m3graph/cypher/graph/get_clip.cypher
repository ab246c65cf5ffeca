// mode: read
// params: source_id, clip_index
// returns: clip_key, start_s, end_s, uri
MATCH (c:Clip {clip_key: $source_id + '#' + toString($clip_index)})
RETURN c.clip_key AS clip_key, c.start_s AS start_s, c.end_s AS end_s, c.uri AS uri
