// mode: read
// params: clip_key
// returns: entity_ids
// Entities whose evidence, exemplars or votes come from this clip (votes and co-occurrences are listed
// on the clip, so no relationship scan is needed).
MATCH (c:Clip {clip_key: $clip_key})
CALL (c) {
  MATCH (c)<-[:IN_CLIP]-(o)-[:OF]->(e) RETURN e.entity_id AS id
  UNION
  UNWIND coalesce(c.vote_pairs, []) + coalesce(c.cooccur_pairs, []) AS p
  UNWIND split(p, ':') AS id
  RETURN toInteger(id) AS id
  UNION
  MATCH (c)<-[:SPEAKS_IN]-(s:Speaker) RETURN s.entity_id AS id
}
RETURN collect(DISTINCT id) AS entity_ids
