// mode: read
// params: after, n
// returns: key, uri
// Migration 15: one page of Utterance.audio_uri values that are host paths (absolute, or file:// URIs), in utt_key
// order (a seek on the utt_key constraint's index); the caller rewrites those under the data directory to keys.
MATCH (u:Utterance)
WHERE u.utt_key > $after AND (u.audio_uri STARTS WITH '/' OR u.audio_uri STARTS WITH 'file:')
WITH u ORDER BY u.utt_key LIMIT $n
RETURN u.utt_key AS key, u.audio_uri AS uri
ORDER BY key
