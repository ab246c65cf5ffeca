// mode: write
// params: ids
// Entities with no evidence left go, with every relationship (mentions stay as raw tags in text), and the manual
// identity votes about them, undone ones included: a vote about an entity that no longer exists can never count
// again (ids are not reused while data remains) and its note may describe the person. Their characters' sizes
// are recounted, since a character that merely lost a member is not rewritten by the refresh.
UNWIND $ids AS id
CALL (id) {
  MATCH (e:Face {entity_id: id}) RETURN e
  UNION
  MATCH (e:Voice {entity_id: id}) RETURN e
  UNION
  MATCH (e:Speaker {entity_id: id}) RETURN e
}
CALL (e) {
  MATCH (v:IdentityVote)-[:ABOUT]->(e)
  DETACH DELETE v
}
OPTIONAL MATCH (e)-[:IS]->(c:Character)
DETACH DELETE e
WITH DISTINCT c WHERE c IS NOT NULL
SET c.size = COUNT { (c)<-[:IS]-() }
