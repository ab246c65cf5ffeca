// mode: read
// params: keys
// returns: key, entity_id
// Persistent speakers by key ("source|name": a name is an identity within its source, unless configuration
// maps it to another source's speaker).
UNWIND $keys AS key
MATCH (s:Speaker {speaker_key: key})
RETURN key, s.entity_id AS entity_id
