// mode: read
// params: char_id
// returns: ids
// A character's entities, also through an alias (a merged-away id keeps resolving).
MATCH (c:Character) WHERE c.char_id = $char_id OR $char_id IN coalesce(c.aliases, [])
MATCH (e)-[:IS]->(c)
RETURN collect(DISTINCT e.entity_id) AS ids
