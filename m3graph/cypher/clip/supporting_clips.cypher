// mode: read
// params: memory_ids
// returns: clip_keys
// The clips whose search text holds these memories (their home clips), read before the memories change.
UNWIND $memory_ids AS id
MATCH (m:Memory {memory_id: id})
RETURN collect(DISTINCT m.video_id + '#' + toString(m.clip_index)) AS clip_keys
