// mode: write
// params: ids
// Entities with no evidence left go, with every relationship (mentions stay as raw tags in text). Their
// characters' sizes are recounted, since a character that merely lost a member is not rewritten by the refresh.
UNWIND $ids AS id
CALL (id) {
  MATCH (e:Face {entity_id: id}) RETURN e
  UNION
  MATCH (e:Voice {entity_id: id}) RETURN e
  UNION
  MATCH (e:Speaker {entity_id: id}) RETURN e
}
OPTIONAL MATCH (e)-[:IS]->(c:Character)
DETACH DELETE e
WITH DISTINCT c WHERE c IS NOT NULL
SET c.size = COUNT { (c)<-[:IS]-() }
