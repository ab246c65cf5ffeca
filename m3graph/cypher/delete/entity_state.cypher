// mode: read
// params: ids
// returns: entity_id, kind, exemplars, quality, obs, evidence, candidates
// After a clip's evidence is gone: each entity's exemplar set, whether any evidence is left, and the
// remaining exemplar candidates (observations once offered as exemplars) to rebuild the set from. A speaker's
// evidence is the sessions it speaks in.
UNWIND $ids AS id
CALL (id) {
  MATCH (e:Face {entity_id: id}) RETURN e, 'face' AS kind
  UNION
  MATCH (e:Voice {entity_id: id}) RETURN e, 'voice' AS kind
  UNION
  MATCH (e:Speaker {entity_id: id}) RETURN e, 'speaker' AS kind
}
CALL (e) {
  OPTIONAL MATCH (o)-[:OF]->(e) WHERE o.candidate
  WITH o ORDER BY o.quality DESC, coalesce(o.obs_key, o.utt_key)
  RETURN collect(CASE WHEN o IS NULL THEN null ELSE {key: coalesce(o.obs_key, o.utt_key), quality: o.quality,
                                                      embedding: o.embedding} END) AS candidates
}
RETURN e.entity_id AS entity_id, kind, e.exemplars AS exemplars, e.exemplar_quality AS quality,
       e.exemplar_obs AS obs, COUNT { (o)-[:OF]->(e) } + COUNT { (e)-[:SPEAKS_IN]->(:Clip) } AS evidence, candidates
