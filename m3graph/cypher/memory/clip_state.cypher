// mode: read
// params: clip_key
// returns: memory_id, kind, support
// What this clip contributed before: used to make re-memorizing a clip a replacement, not an addition.
MATCH (m:Memory) WHERE $clip_key IN m.support_clips
RETURN m.memory_id AS memory_id, m.kind AS kind, m.support_clips AS support
