// mode: read
// params: after, n
// returns: key, uri
// Migration 15: one page of Clip.uri values that are host paths (absolute, or file:// URIs), in clip_key
// order (a seek on the clip_key constraint's index); the caller rewrites those under the data directory to keys.
MATCH (c:Clip)
WHERE c.clip_key > $after AND (c.uri STARTS WITH '/' OR c.uri STARTS WITH 'file:')
WITH c ORDER BY c.clip_key LIMIT $n
RETURN c.clip_key AS key, c.uri AS uri
ORDER BY key
