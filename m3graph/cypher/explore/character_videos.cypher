// mode: read
// params: char_id
// returns: video_id
// The sources a character (or an id merged into it) was seen or heard in: where its correction form looks for
// other people to compare with.
MATCH (c:Character)
WHERE c.char_id = $char_id OR $char_id IN coalesce(c.aliases, [])
MATCH (e)-[:IS]->(c)
CALL (e) {
  MATCH (o:FaceObs)-[:OF]->(e) RETURN DISTINCT o.video_id AS video_id
  UNION
  MATCH (u:Utterance)-[:OF]->(e) RETURN DISTINCT u.video_id AS video_id
}
RETURN DISTINCT video_id ORDER BY video_id
