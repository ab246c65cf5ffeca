// mode: read
// params: source_id
// returns: char_id, memories
// The people of one source: characters whose faces, voices or speakers its memories mention, with how many of
// the source's memories mention them (seeks memories by video_id).
MATCH (m:Memory)
WHERE m.video_id = $source_id
MATCH (m)-[:MENTIONS]->(e)-[:IS]->(c:Character)
RETURN c.char_id AS char_id, count(DISTINCT m) AS memories
ORDER BY memories DESC, char_id
