// mode: read
// params: source_id, from_clip, to_clip, max_memories
// returns: clip_key, clip_index, memory_id, memory_name, kind, entities
// The neighbourhood of a span of clips (clip <-> memories <-> entities <-> characters) as flat rows; the
// explorer turns them into nodes and edges and caps their number.
MATCH (c:Clip {video_id: $source_id})
WHERE $from_clip <= c.clip_index <= $to_clip
OPTIONAL MATCH (m:Memory)-[:IN_CLIP]->(c)
WITH c, m ORDER BY c.clip_index, m.order_in_clip LIMIT $max_memories
CALL (m) {
  OPTIONAL MATCH (m)-[:MENTIONS]->(e)
  OPTIONAL MATCH (e)-[:IS]->(ch:Character)
  RETURN collect(CASE WHEN e IS NULL THEN null ELSE [toLower(labels(e)[0]), e.entity_id, ch.char_id] END) AS entities
}
RETURN c.clip_key AS clip_key, c.clip_index AS clip_index, m.memory_id AS memory_id, m.name AS memory_name,
       m.kind AS kind, entities
