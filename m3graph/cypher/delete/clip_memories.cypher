// mode: read
// params: clip_key, source_id
// returns: memory_id, slot_key
MATCH (m:Memory {video_id: $source_id}) WHERE $clip_key IN m.support_clips
RETURN m.memory_id AS memory_id, m.slot_key AS slot_key
