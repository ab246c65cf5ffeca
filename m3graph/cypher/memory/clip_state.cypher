// mode: read
// params: clip_key, source_id
// returns: memory_id, kind, support
// What this clip contributed before: used to make re-memorizing a clip a replacement, not an addition.
// Support never leaves the video, so the (video_id, clip_index) index bounds the scan.
MATCH (m:Memory {video_id: $source_id}) WHERE $clip_key IN m.support_clips
RETURN m.memory_id AS memory_id, m.kind AS kind, m.support_clips AS support
