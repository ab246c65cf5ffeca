// mode: read
// params: source_id, entity_ids, speakers
// returns: char_id
// The characters whose display name a write to name slots of one source may change: those of the faces and
// voices the slots are about (`face_3 · name`), and, when a slot is about a name (`nora · name`, a speaker's
// name fact), those of the speakers who speak in the source.
CALL () {
  UNWIND $entity_ids AS id
  CALL (id) {
    MATCH (e:Face {entity_id: id}) RETURN e
    UNION
    MATCH (e:Voice {entity_id: id}) RETURN e
  }
  MATCH (e)-[:IS]->(c:Character)
  RETURN c
  UNION
  WITH $speakers AS wanted
  WHERE wanted
  MATCH (:Clip {video_id: $source_id})<-[:SPEAKS_IN]-(:Speaker)-[:IS]->(c:Character)
  RETURN c
}
RETURN DISTINCT c.char_id AS char_id
