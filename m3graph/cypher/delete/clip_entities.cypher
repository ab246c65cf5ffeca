// mode: read
// params: clip_key
// returns: entity_ids
// Entities whose evidence, exemplars or votes come from this clip.
CALL () {
  MATCH (c:Clip {clip_key: $clip_key})<-[:IN_CLIP]-(o)-[:OF]->(e) RETURN e.entity_id AS id
  UNION
  MATCH (f:Face)-[r:SAME_AS]->(v:Voice) WHERE any(x IN r.evidence WHERE x STARTS WITH $clip_key + '|')
  UNWIND [f.entity_id, v.entity_id] AS id RETURN id
  UNION
  MATCH (a:Face)-[r:CO_OCCURS]->(b:Face) WHERE $clip_key IN r.clips
  UNWIND [a.entity_id, b.entity_id] AS id RETURN id
}
RETURN collect(DISTINCT id) AS entity_ids
