// mode: write
// params: entity_ids, memory_ids
// A person removed on request: their evidence (with embeddings), the memories that mention them, the identity
// votes about their entities (undone ones too: a vote's note may describe them), their entities and character.
// Nothing that describes them is left behind.
CALL () {
  UNWIND $memory_ids AS id
  MATCH (m:Memory {memory_id: id})
  DETACH DELETE m
}
CALL () {
  UNWIND $entity_ids AS id
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
  OPTIONAL MATCH (o)-[:OF]->(e) WHERE o:FaceObs OR o:Utterance
  DETACH DELETE o
  WITH DISTINCT e
  OPTIONAL MATCH (e)-[:IS]->(c:Character)
  DETACH DELETE e, c
}
