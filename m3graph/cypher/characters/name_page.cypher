// mode: read
// params: after, n
// returns: char_id
// One page of characters in char_id order (a range seek on the character_key constraint's index), for the
// backfill of Character.name (m3graph.schema.character_names).
MATCH (c:Character)
WHERE c.char_id > $after
RETURN c.char_id AS char_id
ORDER BY char_id
LIMIT $n
