// mode: read
// params: clip_key
// returns: shas
// The files a clip (a conversation session) holds: candidates for deletion with it.
OPTIONAL MATCH (:Clip {clip_key: $clip_key})-[:HAS_FILE]->(f:File)
RETURN collect(DISTINCT f.sha256) AS shas
