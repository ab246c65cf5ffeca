// mode: read
// params: source_id, limit
// returns: kind, entity_id, name, char_id, crop, snippet
// The faces and voices perceived in one source, with their character, best crop and first words: what the
// correction form offers to pick from instead of typed ids.
CALL () {
  MATCH (o:FaceObs {video_id: $source_id})-[:OF]->(f:Face)
  WITH f, o ORDER BY o.quality DESC
  WITH f, collect(o)[0] AS best
  RETURN 'face' AS kind, f AS e, CASE WHEN best.crop_uri IS NULL THEN null
         ELSE {uri: best.crop_uri, source_id: best.video_id, clip_index: best.clip_index} END AS crop,
         null AS snippet
  UNION
  MATCH (u:Utterance {video_id: $source_id})-[:OF]->(v:Voice)
  WITH v, u ORDER BY u.clip_index, u.start_s
  WITH v, collect(u)[0] AS first
  RETURN 'voice' AS kind, v AS e, null AS crop, left(coalesce(first.text, ''), 60) AS snippet
}
OPTIONAL MATCH (e)-[:IS]->(ch:Character)
RETURN kind, e.entity_id AS entity_id, e.name AS name, ch.char_id AS char_id, crop, snippet
ORDER BY kind, entity_id
LIMIT $limit
