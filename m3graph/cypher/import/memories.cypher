// mode: write
// params: source_id, rows
// Imported memories, written as memory/upsert would for a first memorization of their clip (support = that
// clip only), but without semantic deduplication: the research graph was already deduplicated, and the
// re-embedded vectors must not merge statements the original kept apart. Statements carry their slots
// (m3graph.fact_versions), so an imported graph's facts get versions like memorized ones.
UNWIND $rows AS r
MATCH (c:Clip {clip_key: r.clip_key})
MERGE (m:Memory {memory_id: r.memory_id})
ON CREATE SET m.created_at = datetime()
SET m.kind = r.kind, m.text = r.text, m.video_id = $source_id, m.clip_index = r.clip_index,
    m.order_in_clip = r.order, m.embedding = r.embedding, m.is_equivalence = r.is_equivalence,
    m.entity_ids = r.entity_ids, m.first_clip = r.clip_key, m.last_clip = r.clip_key,
    m.support_clips = [r.clip_key], m.support = 1, m.start_s = null, m.end_s = null,
    m.name = left(r.text, 80), m.imported = true, m.import_node_id = r.old_id, m.slot_key = r.slot_key,
    m.slot_subject = r.slot_subject, m.slot_attribute = r.slot_attribute, m.slot_value = r.slot_value,
    m.subject_key = r.subject_key, m.value_key = r.value_key, m.negated = r.negated, m.changed = r.changed
MERGE (m)-[:IN_CLIP]->(c)
WITH m, r
CALL (m, r) {
  UNWIND r.mentions AS x
  CALL (x) {
    MATCH (e:Face {entity_id: x.id}) WHERE x.kind = 'face' RETURN e
    UNION
    MATCH (e:Voice {entity_id: x.id}) WHERE x.kind = 'voice' RETURN e
  }
  MERGE (m)-[rel:MENTIONS]->(e)
  SET rel.weight = 1.0, rel.position = x.position
}
