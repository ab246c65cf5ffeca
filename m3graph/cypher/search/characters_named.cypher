// mode: read
// params: text, videos, before_clip
// returns: char_id, mentions, evidence
// Name → character: semantic memories that contain the name, counted per character they mention.
CALL db.index.fulltext.queryNodes('memory_text', $text, {limit: 200}) YIELD node AS m, score
WITH m, score
WHERE m.kind = 'semantic' AND ($videos IS NULL OR m.video_id IN $videos)
  AND ($before_clip IS NULL OR m.clip_index <= $before_clip)
MATCH (m)-[:MENTIONS]->(e)-[:IS]->(c:Character)
WITH c, count(DISTINCT m) AS mentions, sum(score) AS weight, collect(DISTINCT m.memory_id)[0..5] AS evidence
RETURN c.char_id AS char_id, mentions, evidence
ORDER BY weight DESC, mentions DESC, char_id
