// mode: read
// params: ids
// returns: face, voice, votes, evidence, face_char, voice_char
// Every face-voice equivalence vote touching these entities, with the clips that voted: why a character is
// what it is.
CALL () {
  UNWIND $ids AS id
  MATCH (f:Face {entity_id: id})-[s:SAME_AS]->(v:Voice)
  RETURN f, s, v
  UNION
  UNWIND $ids AS id
  MATCH (f:Face)-[s:SAME_AS]->(v:Voice {entity_id: id})
  RETURN f, s, v
}
OPTIONAL MATCH (f)-[:IS]->(cf:Character)
OPTIONAL MATCH (v)-[:IS]->(cv:Character)
RETURN f.entity_id AS face, v.entity_id AS voice, s.votes AS votes, coalesce(s.evidence, []) AS evidence,
       cf.char_id AS face_char, cv.char_id AS voice_char
ORDER BY votes DESC, face, voice
