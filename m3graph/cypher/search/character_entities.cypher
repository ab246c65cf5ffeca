// mode: read
// params: char_ids
// returns: entity_ids
// Entities of the given characters; retired ids resolve through the survivors' aliases.
UNWIND $char_ids AS cid
MATCH (c:Character) WHERE c.char_id = cid OR cid IN c.aliases
MATCH (e)-[:IS]->(c)
RETURN collect(DISTINCT e.entity_id) AS entity_ids
