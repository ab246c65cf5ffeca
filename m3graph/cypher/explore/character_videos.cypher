// mode: read
// params: char_id
// returns: source_id
// The sources a character (or an id merged into it) was seen or heard in: where its correction form looks for
// other people to compare with.
MATCH (c:Character)
WHERE c.char_id = $char_id OR $char_id IN coalesce(c.aliases, [])
MATCH (e)-[:IS]->(c)
CALL (e) {
  MATCH (o:FaceObs)-[:OF]->(e) RETURN DISTINCT o.video_id AS source_id
  UNION
  MATCH (u:Utterance)-[:OF]->(e) RETURN DISTINCT u.video_id AS source_id
}
RETURN DISTINCT source_id ORDER BY source_id
