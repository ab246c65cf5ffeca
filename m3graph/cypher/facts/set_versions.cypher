// mode: write
// params: rows
// Writes what the walk of a slot decided for each of its memories: whether it holds now, the intervals of event
// time in which it held (parallel lists: source-timeline seconds, and epoch seconds where the source has dates;
// 1e18 = still holds) and its outgoing SUPERSEDES / CONTRADICTS edges, which are rewritten with the slot (they are
// derived from the memories, which are never deleted here).
UNWIND $rows AS r
MATCH (m:Memory {memory_id: r.memory_id})
SET m.current = r.current, m.valid_from_order = r.from_order, m.valid_to_order = r.to_order,
    m.valid_from_at = r.from_at, m.valid_to_at = r.to_at, m.superseded_by = r.superseded_by,
    m.superseded_note = r.note
WITH m, r
CALL (m) {
  MATCH (m)-[old:SUPERSEDES|CONTRADICTS]->()
  DELETE old
}
CALL (m, r) {
  UNWIND r.supersedes AS s
  MATCH (o:Memory {memory_id: s.id})
  MERGE (m)-[e:SUPERSEDES]->(o)
  SET e.event_order = s.order, e.clip_key = s.clip_key, e.event_at = s.at
}
CALL (m, r) {
  UNWIND r.contradicts AS s
  MATCH (o:Memory {memory_id: s.id})
  MERGE (m)-[e:CONTRADICTS]->(o)
  SET e.event_order = s.order, e.clip_key = s.clip_key
}
