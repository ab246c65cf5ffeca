// mode: read
// params: memory_id
// returns: current, superseded_note
// What the walk decided for one memory (after a correction recomputed its slot).
MATCH (m:Memory {memory_id: $memory_id})
RETURN m.current AS current, m.superseded_note AS superseded_note
