// mode: read
// params: sources, names, k
// returns: memory_id, source_id, slot_key, slot_subject, slot_value, current, clip_index, valid_from_at, valid_to_at, ended_by, changed_from
// The baseline of bench/event_lookup.py: facts/anchor_versions as it was before migration 19 (issue 40), which
// looked a name up in every source by key (`source|name`): one index seek per source and name, and with
// `sources` null at most the first 1,000 sources. The current statement seeks `Thing.name_key` once per name.
WITH CASE WHEN $sources IS NULL THEN COLLECT { MATCH (v:Source) RETURN v.source_id LIMIT 1000 }
          ELSE $sources END AS sources
UNWIND sources AS source
UNWIND $names AS name
MATCH (t:Thing {thing_key: source + '|' + name})<-[:NAMES]-(m:Memory)
WHERE m.slot_key IS NOT NULL AND NOT coalesce(m.negated, false)
WITH DISTINCT m LIMIT $k
RETURN m.memory_id AS memory_id, m.video_id AS source_id, m.slot_key AS slot_key, m.slot_subject AS slot_subject,
       m.slot_value AS slot_value, m.current AS current, m.clip_index AS clip_index,
       m.valid_from_at AS valid_from_at, m.valid_to_at AS valid_to_at,
       COLLECT { MATCH (n:Memory)-[s:SUPERSEDES]->(m) RETURN {order: s.event_order, clip_key: s.clip_key} } AS ended_by,
       COUNT { (m)-[:SUPERSEDES]->(:Memory) } AS changed_from
