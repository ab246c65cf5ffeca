// mode: read
// params: char_id
// returns: char_id, name, aliases, size, members
// A character by its id or by an alias (ids merged into it keep resolving), with its member entities.
MATCH (c:Character)
WHERE c.char_id = $char_id OR $char_id IN coalesce(c.aliases, [])
WITH c ORDER BY CASE WHEN c.char_id = $char_id THEN 0 ELSE 1 END LIMIT 1
RETURN c.char_id AS char_id, c.name AS name, coalesce(c.aliases, []) AS aliases, c.size AS size,
       COLLECT { MATCH (e)-[:IS]->(c)
                 RETURN {entity_id: e.entity_id, kind: toLower(labels(e)[0]), name: e.name} } AS members
