// mode: write
// params: clip_key, source_id, clip_index, rows
// Creates or refreshes memories of this clip and adds this clip's support to reinforced ones. Support is a
// set of clip keys, so re-running a clip never counts twice. `event_*` are the memory's time expressions resolved
// at ingestion (m3graph.dates.TimeNotes: parallel lists; null, i.e. absent, when it has none). `slot_*` and the
// claim (`value_key`, `negated`, `changed`) are the statement's slot (m3graph.fact_versions; null without one).
MATCH (c:Clip {clip_key: $clip_key})
UNWIND $rows AS r
MERGE (m:Memory {memory_id: r.memory_id})
ON CREATE SET m.created_at = datetime(), m.kind = r.kind, m.text = r.text, m.video_id = $source_id,
              m.clip_index = $clip_index, m.order_in_clip = r.order, m.embedding = r.embedding,
              m.is_equivalence = r.is_equivalence, m.entity_ids = r.entity_ids, m.first_clip = $clip_key,
              m.support_clips = [], m.start_s = r.start_s, m.end_s = r.end_s, m.source_ids = r.source_ids,
              m.event_said = r.event_said, m.event_means = r.event_means, m.event_first = r.event_first,
              m.event_last = r.event_last, m.slot_key = r.slot_key, m.slot_subject = r.slot_subject,
              m.slot_attribute = r.slot_attribute, m.slot_value = r.slot_value, m.subject_key = r.subject_key,
              m.value_key = r.value_key, m.negated = r.negated, m.changed = r.changed
FOREACH (_ IN CASE WHEN r.refresh THEN [1] ELSE [] END |
  SET m.text = r.text, m.embedding = r.embedding, m.order_in_clip = r.order, m.entity_ids = r.entity_ids,
      m.is_equivalence = r.is_equivalence, m.start_s = r.start_s, m.end_s = r.end_s,
      m.source_ids = r.source_ids, m.event_said = r.event_said, m.event_means = r.event_means,
      m.event_first = r.event_first, m.event_last = r.event_last, m.slot_key = r.slot_key,
      m.slot_subject = r.slot_subject, m.slot_attribute = r.slot_attribute, m.slot_value = r.slot_value,
      m.subject_key = r.subject_key, m.value_key = r.value_key, m.negated = r.negated, m.changed = r.changed)
SET m.support_clips = CASE WHEN $clip_key IN m.support_clips THEN m.support_clips ELSE m.support_clips + $clip_key END
SET m.support = size(m.support_clips), m.last_clip = $clip_key,
    m.name = left(m.text, 80)
FOREACH (_ IN CASE WHEN m.first_clip = $clip_key THEN [1] ELSE [] END | MERGE (m)-[:IN_CLIP]->(c))
WITH m, r
CALL (m, r) {
  OPTIONAL MATCH (m)-[old:MENTIONS]->(e)
  WHERE r.refresh AND NOT e.entity_id IN r.entity_ids
  DELETE old
}
CALL (m, r) {
  UNWIND r.mentions AS x
  CALL (x) {
    MATCH (e:Face {entity_id: x.id}) WHERE x.kind = 'face' RETURN e
    UNION
    MATCH (e:Voice {entity_id: x.id}) WHERE x.kind = 'voice' RETURN e
    UNION
    MATCH (e:Speaker {entity_id: x.id}) WHERE x.kind = 'speaker' RETURN e
  }
  MERGE (m)-[rel:MENTIONS]->(e)
  SET rel.weight = toFloat(m.support), rel.position = x.position
}
