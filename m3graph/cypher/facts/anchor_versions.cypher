// mode: read
// params: sources, names, k
// returns: memory_id, source_id, slot_key, slot_subject, slot_value, current, clip_index, valid_from_at, valid_to_at, ended_by, changed_from
// The fact versions whose value is one of these names (normalised, as `Thing.thing_key` keys them within a
// source): the event a question ties its time to ("when she lived in Lisbon", "before I switched to Postgres"),
// with the event-time intervals it held, the clips whose statements ended it, and how many versions it ended
// (a value that began by a change: "before I switched to X"; reasoning/event_as_of.py).
// `sources` null: every source, found by the name alone (`Thing.name_key`, one index seek per name however many
// sources the graph holds); otherwise the named sources' things by key (one seek per source and name).
CALL () {
  UNWIND CASE WHEN $sources IS NULL THEN [] ELSE $sources END AS source
  UNWIND $names AS name
  MATCH (t:Thing {thing_key: source + '|' + name})
  RETURN t
  UNION
  UNWIND CASE WHEN $sources IS NULL THEN $names ELSE [] END AS name
  MATCH (t:Thing {name_key: name})
  RETURN t
}
MATCH (t)<-[:NAMES]-(m:Memory)
WHERE m.slot_key IS NOT NULL AND NOT coalesce(m.negated, false)
WITH DISTINCT m LIMIT $k
RETURN m.memory_id AS memory_id, m.video_id AS source_id, m.slot_key AS slot_key, m.slot_subject AS slot_subject,
       m.slot_value AS slot_value, m.current AS current, m.clip_index AS clip_index,
       m.valid_from_at AS valid_from_at, m.valid_to_at AS valid_to_at,
       COLLECT { MATCH (n:Memory)-[s:SUPERSEDES]->(m) RETURN {order: s.event_order, clip_key: s.clip_key} } AS ended_by,
       COUNT { (m)-[:SUPERSEDES]->(:Memory) } AS changed_from
