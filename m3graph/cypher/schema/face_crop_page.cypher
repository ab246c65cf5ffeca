// mode: read
// params: after, n
// returns: key, uri
// Migration 15: one page of FaceObs.crop_uri values that are host paths (absolute, or file:// URIs), in obs_key
// order (a seek on the obs_key constraint's index); the caller rewrites those under the data directory to keys.
MATCH (o:FaceObs)
WHERE o.obs_key > $after AND (o.crop_uri STARTS WITH '/' OR o.crop_uri STARTS WITH 'file:')
WITH o ORDER BY o.obs_key LIMIT $n
RETURN o.obs_key AS key, o.crop_uri AS uri
ORDER BY key
