// mode: read
// params: ids, limit
// returns: memory_id, kind, text, source_id, clip_index, order, chars
// Every memory mentioning one of these entities, in time order, with the character of each mentioned
// entity so tags render from structure.
UNWIND $ids AS id
CALL (id) {
  MATCH (e:Face {entity_id: id}) RETURN e
  UNION
  MATCH (e:Voice {entity_id: id}) RETURN e
  UNION
  MATCH (e:Speaker {entity_id: id}) RETURN e
}
MATCH (m:Memory)-[:MENTIONS]->(e)
WITH DISTINCT m
ORDER BY m.video_id, m.clip_index, m.order_in_clip
LIMIT $limit
CALL (m) {
  OPTIONAL MATCH (m)-[:MENTIONS]->(x)
  OPTIONAL MATCH (x)-[:IS]->(ch:Character)
  RETURN collect(CASE WHEN x IS NULL THEN null ELSE [toLower(labels(x)[0]), x.entity_id, ch.char_id] END) AS chars
}
RETURN m.memory_id AS memory_id, m.kind AS kind, m.text AS text, m.video_id AS source_id,
       m.clip_index AS clip_index, m.order_in_clip AS order, chars
