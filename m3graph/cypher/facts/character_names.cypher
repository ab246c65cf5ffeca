// mode: read
// params: char_ids
// returns: char_id, fact_name, speaker_name
// Names are facts: a character's display name is the current value of a name fact about one of its faces,
// voices or speakers ("<face_3>'s name is Mia."; the most recently written when several hold), else the name a
// conversation gives its speaker. Each member's name slot is found by the memory_slot index.
UNWIND $char_ids AS id
MATCH (c:Character {char_id: id})
CALL (c) {
  MATCH (e)-[:IS]->(c)
  WITH CASE WHEN e:Face THEN 'face_' WHEN e:Voice THEN 'voice_' ELSE 'speaker_' END + toString(e.entity_id)
       + ' · name' AS slot
  MATCH (m:Memory {slot_key: slot})
  WHERE m.current
  WITH m ORDER BY m.created_at DESC, m.memory_id LIMIT 1
  RETURN m.slot_value AS fact_name
  UNION
  RETURN null AS fact_name
}
WITH c, collect(fact_name) AS names
RETURN c.char_id AS char_id, [n IN names WHERE n IS NOT NULL][0] AS fact_name,
       COLLECT { MATCH (s:Speaker)-[:IS]->(c) RETURN s.speaker_name ORDER BY s.entity_id LIMIT 1 }[0] AS speaker_name
