// mode: read
// params: memory_ids
// returns: clip_keys
// The clips whose search text holds these memories (every clip that supports one), read before they change.
UNWIND $memory_ids AS id
MATCH (m:Memory {memory_id: id})
UNWIND m.support_clips AS key
RETURN collect(DISTINCT key) AS clip_keys
