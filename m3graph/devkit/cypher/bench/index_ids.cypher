// mode: read
// returns: id, name, type
// Every index with its id (the id names the index folder under schema/index/<provider>/ in the store):
// bench/conversation.py sizes each index on disk by it.
SHOW INDEXES YIELD id, name, type
RETURN id, name, type ORDER BY name
