// mode: read
// params: source_id, subject_key, attribute_key, k
// returns: memory_id, slot_key, slot_subject, slot_attribute, slot_value, negated, current, valid_from_order, valid_to_order, valid_from_at, valid_to_at, superseded_by, superseded_note, support_clips, contradicts, manual_state, manual_note, manual_at, manual_via
// Every version of the slots of one subject (optionally one attribute) in one source, oldest first: the
// `history` tool. A slot key starts "subject · attribute", so the prefix finds the slot(s) by index (the hint:
// on little data the planner would read the whole source through its video_id; tests/graph/test_query_plans.py).
MATCH (m:Memory {video_id: $source_id})
USING INDEX m:Memory(slot_key)
WHERE m.slot_key STARTS WITH $subject_key + ' · ' + coalesce($attribute_key, '')
WITH m ORDER BY m.slot_key, m.valid_from_order[0], m.memory_id LIMIT $k
OPTIONAL MATCH (m)-[:CONTRADICTS]-(o:Memory)
RETURN m.memory_id AS memory_id, m.slot_key AS slot_key, m.slot_subject AS slot_subject,
       m.slot_attribute AS slot_attribute, m.slot_value AS slot_value, m.negated AS negated, m.current AS current,
       m.valid_from_order AS valid_from_order, m.valid_to_order AS valid_to_order,
       m.valid_from_at AS valid_from_at, m.valid_to_at AS valid_to_at, m.superseded_by AS superseded_by,
       m.superseded_note AS superseded_note, m.support_clips AS support_clips,
       collect(o.memory_id) AS contradicts, m.manual_state AS manual_state, m.manual_note AS manual_note,
       m.manual_at AS manual_at, m.manual_via AS manual_via
