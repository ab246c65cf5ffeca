// mode: write
// params: ids
// Entities with no evidence left go, with every relationship (mentions stay as raw tags in text).
UNWIND $ids AS id
CALL (id) {
  MATCH (e:Face {entity_id: id}) RETURN e
  UNION
  MATCH (e:Voice {entity_id: id}) RETURN e
}
DETACH DELETE e
