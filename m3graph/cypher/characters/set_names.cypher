// mode: write
// params: rows
// returns: changed
// Character.name kept current (m3graph.graphdb.names): the display name `facts/character_names` derives, or
// `character_K` when none is known, so Neo4j Browser and Bloom show "Mia", not "character_4". Only a name that
// differs is written.
UNWIND $rows AS r
MATCH (c:Character {char_id: r.char_id})
WITH c, r WHERE c.name IS NULL OR c.name <> r.name
SET c.name = r.name
RETURN count(c) AS changed
