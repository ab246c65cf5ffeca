// mode: read
// params: ids
// returns: entities, edges, cannot
CALL () {
  UNWIND $ids AS id
  CALL (id) {
    MATCH (e:Face {entity_id: id}) RETURN e, 'face' AS kind
    UNION
    MATCH (e:Voice {entity_id: id}) RETURN e, 'voice' AS kind
  }
  OPTIONAL MATCH (e)-[:IS]->(c:Character)
  RETURN collect({id: e.entity_id, kind: kind, char_id: c.char_id}) AS entities
}
CALL () {
  MATCH (f:Face)-[r:SAME_AS]->(v:Voice)
  WHERE f.entity_id IN $ids AND v.entity_id IN $ids
  RETURN collect({face: f.entity_id, voice: v.entity_id, votes: r.votes}) AS edges
}
CALL () {
  MATCH (a:Face)-[r:CO_OCCURS]->(b:Face)
  WHERE a.entity_id IN $ids AND b.entity_id IN $ids
  RETURN collect([a.entity_id, b.entity_id]) AS cannot
}
RETURN entities, edges, cannot
