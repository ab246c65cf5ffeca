// mode: write
// params: rows
// Migration 12: stores the time notes computed for a batch of memories (m3graph.dates.TimeNotes, the same
// `event_*` properties the chat ingestion writes); the same values set twice are the same graph.
UNWIND $rows AS r
MATCH (m:Memory {memory_id: r.memory_id})
SET m.event_said = r.event_said, m.event_means = r.event_means, m.event_first = r.event_first,
    m.event_last = r.event_last
