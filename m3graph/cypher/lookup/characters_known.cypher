// mode: read
// params: char_ids
// returns: char_id
// Which of these ids are characters: one index seek each (an id merged into another is checked on its own,
// through explore/character, only when this misses it).
UNWIND $char_ids AS cid
MATCH (c:Character {char_id: cid})
RETURN c.char_id AS char_id
