// mode: read
// params: face_ids, voice_ids, speaker_ids
// returns: kind, entity_id
CALL () {
  UNWIND $face_ids AS id MATCH (e:Face {entity_id: id}) RETURN 'face' AS kind, e.entity_id AS entity_id
  UNION
  UNWIND $voice_ids AS id MATCH (e:Voice {entity_id: id}) RETURN 'voice' AS kind, e.entity_id AS entity_id
  UNION
  UNWIND $speaker_ids AS id MATCH (e:Speaker {entity_id: id}) RETURN 'speaker' AS kind, e.entity_id AS entity_id
}
RETURN kind, entity_id
