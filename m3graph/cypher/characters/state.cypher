// mode: read
// params: ids
// returns: entities, edges, cannot, manual
CALL () {
  UNWIND $ids AS id
  CALL (id) {
    MATCH (e:Face {entity_id: id}) RETURN e, 'face' AS kind
    UNION
    MATCH (e:Voice {entity_id: id}) RETURN e, 'voice' AS kind
    UNION
    MATCH (e:Speaker {entity_id: id}) RETURN e, 'speaker' AS kind
  }
  OPTIONAL MATCH (e)-[:IS]->(c:Character)
  // prev: the character the entity was last moved out of; aliases: ids merged into its character. Together
  // they let a split give a merged-away id back to the people it named.
  RETURN collect({id: e.entity_id, kind: kind, char_id: c.char_id, prev: e.prev_char_id,
                  aliases: coalesce(c.aliases, [])}) AS entities
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
CALL () {
  // Manual identity votes (m3graph.graphdb.votes): the newest active vote on a pair wins.
  MATCH (v:IdentityVote)
  WHERE v.undone_at IS NULL AND v.a IN $ids AND v.b IN $ids
  WITH v ORDER BY v.vote_id DESC
  WITH v.a AS a, v.b AS b, collect(v.verdict)[0] AS verdict
  RETURN collect({a: a, b: b, verdict: verdict}) AS manual
}
RETURN entities, edges, cannot, manual
