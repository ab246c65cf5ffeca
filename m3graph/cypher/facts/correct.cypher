// mode: write
// params: memory_id, state, note, via, at, entry
// returns: source_id, slot_key, before, changed
// An analyst's correction of one fact (m3graph.fact_versions: "superseded", "current" or "clear"), under the
// source's memory lock so a concurrent clip write recomputes the slot after it or before it, never beside it.
// Only a memory with a slot is changed, and only when the state differs (a repeated correction writes nothing);
// each change appends one JSON line to `manual_log`, the audit trail that "clear" keeps. The caller then
// recomputes the slot (facts/slot_assertions -> facts/set_versions) in the same transaction.
MATCH (m:Memory {memory_id: $memory_id})
MERGE (l:Lock {name: 'memory:' + m.video_id})
SET l.touched_at = timestamp()
WITH m, m.manual_state AS before
WITH m, before, m.slot_key IS NOT NULL AND coalesce(before, 'clear') <> $state AS changed
FOREACH (_ IN CASE WHEN changed AND $state = 'clear' THEN [1] ELSE [] END |
  REMOVE m.manual_state, m.manual_note, m.manual_at, m.manual_via)
FOREACH (_ IN CASE WHEN changed AND $state <> 'clear' THEN [1] ELSE [] END |
  SET m.manual_state = $state, m.manual_note = $note, m.manual_at = $at, m.manual_via = $via)
FOREACH (_ IN CASE WHEN changed THEN [1] ELSE [] END |
  SET m.manual_log = coalesce(m.manual_log, []) + $entry)
RETURN m.video_id AS source_id, m.slot_key AS slot_key, before, changed
