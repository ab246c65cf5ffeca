// mode: read
// params: limit
// returns: char_id, name, size, members
// The people index: characters with their member entities, largest first.
MATCH (c:Character)
WITH c ORDER BY c.size DESC, c.char_id LIMIT $limit
RETURN c.char_id AS char_id, c.name AS name, c.size AS size,
       COLLECT { MATCH (e)-[:IS]->(c) RETURN toLower(labels(e)[0]) + '_' + toString(e.entity_id) } AS members
