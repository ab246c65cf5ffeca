// mode: read
// params: clip_key, video_id
// returns: memory_id
MATCH (m:Memory {video_id: $video_id}) WHERE $clip_key IN m.support_clips RETURN m.memory_id AS memory_id
