// mode: read
// params: clip_key
// returns: memory_id
MATCH (m:Memory) WHERE $clip_key IN m.support_clips RETURN m.memory_id AS memory_id
