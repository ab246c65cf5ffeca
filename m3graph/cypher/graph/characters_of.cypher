// mode: read
// params: ids
// returns: entity_id, char_id
UNWIND $ids AS id
CALL (id) {
  MATCH (e:Face {entity_id: id}) RETURN e
  UNION
  MATCH (e:Voice {entity_id: id}) RETURN e
  UNION
  MATCH (e:Speaker {entity_id: id}) RETURN e
}
MATCH (e)-[:IS]->(c:Character)
RETURN id AS entity_id, c.char_id AS char_id
