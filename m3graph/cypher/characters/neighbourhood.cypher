// mode: read
// params: ids
// returns: id, linked
// Entities whose character may change together with $ids: SAME_AS neighbours, current co-members and
// entities joined by a manual identity vote.
UNWIND $ids AS id
CALL (id) {
  MATCH (e:Face {entity_id: id}) RETURN e
  UNION
  MATCH (e:Voice {entity_id: id}) RETURN e
  UNION
  MATCH (e:Speaker {entity_id: id}) RETURN e
}
OPTIONAL MATCH (e)-[:SAME_AS]-(n)
OPTIONAL MATCH (e)-[:IS]->(:Character)<-[:IS]-(m)
OPTIONAL MATCH (e)<-[:ABOUT]-(:IdentityVote)-[:ABOUT]->(w)
RETURN id, [x IN collect(DISTINCT n.entity_id) + collect(DISTINCT m.entity_id) + collect(DISTINCT w.entity_id)
            WHERE x IS NOT NULL] AS linked
