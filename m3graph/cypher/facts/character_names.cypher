// mode: read
// params: char_ids
// returns: char_id, fact_name, fact_id, speaker_name
// Names are facts: a character's display name is the current value of a name fact about one of its members
// (the most recently written when several hold), else the name a conversation gives its speaker. A face's or a
// voice's name fact is "<face_3>'s name is Mia." (slot `face_3 · name`, found by the memory_slot index); a
// speaker's is about the name it speaks under, its tag right after it ("Nora <speaker_5>'s name is Mia.", slot
// `nora · name`: speaker tags leave slot subjects, so ingestion's fact, speech and a memorizer share the slot),
// found from the speaker through its MENTIONS. One derivation for every reader and for `Character.name`, which
// the write path keeps current (m3graph.graphdb.names).
UNWIND $char_ids AS id
MATCH (c:Character {char_id: id})
CALL (c) {
  CALL (c) {
    MATCH (e)-[:IS]->(c)
    WHERE e:Face OR e:Voice
    WITH CASE WHEN e:Face THEN 'face_' ELSE 'voice_' END + toString(e.entity_id) + ' · name' AS slot
    MATCH (m:Memory {slot_key: slot})
    WHERE m.current
    RETURN m
    UNION
    MATCH (s:Speaker)-[:IS]->(c)
    MATCH (s)<-[:MENTIONS]-(m:Memory)
    WHERE m.kind = 'semantic' AND m.current AND m.slot_key = m.subject_key + ' · name'
      AND m.text STARTS WITH m.slot_subject + ' <speaker_' + toString(s.entity_id) + '>'
    RETURN m
  }
  WITH m ORDER BY m.created_at DESC, m.memory_id LIMIT 1
  RETURN m.slot_value AS fact_name, m.memory_id AS fact_id
  UNION
  RETURN null AS fact_name, null AS fact_id
}
WITH c, collect({name: fact_name, id: fact_id}) AS found
WITH c, [f IN found WHERE f.name IS NOT NULL][0] AS fact
RETURN c.char_id AS char_id, fact.name AS fact_name, fact.id AS fact_id,
       COLLECT { MATCH (s:Speaker)-[:IS]->(c) RETURN s.speaker_name ORDER BY s.entity_id LIMIT 1 }[0] AS speaker_name
