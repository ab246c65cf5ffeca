// mode: read
// returns: id, name
// Vector indexes and their ids (the id names the index folder under schema/index/vector-*/ in the store).
SHOW INDEXES YIELD id, name, type WHERE type = 'VECTOR'
RETURN id, name ORDER BY name
