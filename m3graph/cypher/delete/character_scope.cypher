// mode: read
// params: char_id
// returns: entity_ids, memory_ids, neighbours, slots
MATCH (c:Character) WHERE c.char_id = $char_id OR $char_id IN c.aliases
MATCH (e)-[:IS]->(c)
OPTIONAL MATCH (m:Memory)-[:MENTIONS]->(e)
OPTIONAL MATCH (e)-[:SAME_AS|CO_OCCURS]-(n)
RETURN collect(DISTINCT e.entity_id) AS entity_ids, collect(DISTINCT m.memory_id) AS memory_ids,
       collect(DISTINCT n.entity_id) AS neighbours,
       collect(DISTINCT CASE WHEN m.slot_key IS NOT NULL THEN {source_id: m.video_id, slot_key: m.slot_key} END) AS slots
