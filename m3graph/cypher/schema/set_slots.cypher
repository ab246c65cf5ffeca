// mode: write
// params: rows
// Migration 13: the slot and claim of statements written before memories had them (m3graph.fact_versions).
UNWIND $rows AS r
MATCH (m:Memory {memory_id: r.memory_id})
SET m.slot_key = r.slot_key, m.slot_subject = r.slot_subject, m.slot_attribute = r.slot_attribute,
    m.slot_value = r.slot_value, m.subject_key = r.subject_key, m.value_key = r.value_key, m.negated = r.negated,
    m.changed = r.changed
