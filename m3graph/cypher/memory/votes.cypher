// mode: write
// params: clip_key, sources, votes
// returns: face_id, voice_id
// Sets this clip's equivalence evidence for the given sources to exactly $votes: evidence is a set of
// 'clip|source' strings, votes = its size, so retries never double-count and re-memorizing replaces.
// The clip keeps the list of pairs it voted on (`vote_pairs`), so nothing here scans all SAME_AS edges.
MATCH (c:Clip {clip_key: $clip_key})
CALL (c) {
  UNWIND coalesce(c.vote_pairs, []) AS p
  WITH split(p, ':') AS ids
  MATCH (f:Face {entity_id: toInteger(ids[0])})-[r:SAME_AS]->(v:Voice {entity_id: toInteger(ids[1])})
  WHERE any(s IN $sources WHERE ($clip_key + '|' + s) IN r.evidence)
  SET r.evidence = [x IN r.evidence WHERE NOT any(s IN $sources WHERE x = $clip_key + '|' + s)]
  SET r.votes = size(r.evidence)
  WITH f, v, r
  CALL (r) { WITH r WHERE r.votes = 0 DELETE r }
  RETURN collect([f.entity_id, v.entity_id]) AS before
}
CALL (c) {
  UNWIND $votes AS x
  MATCH (f:Face {entity_id: x.face_id}), (v:Voice {entity_id: x.voice_id})
  MERGE (f)-[r:SAME_AS]->(v)
  ON CREATE SET r.evidence = [], r.first_clip = $clip_key, r.created_at = datetime()
  WITH f, v, r, $clip_key + '|' + x.source AS ev
  SET r.evidence = CASE WHEN ev IN r.evidence THEN r.evidence ELSE r.evidence + ev END
  SET r.votes = size(r.evidence), r.last_clip = $clip_key
  RETURN collect([f.entity_id, v.entity_id]) AS after
}
CALL (c, before, after) {
  UNWIND before + after AS pair
  WITH DISTINCT pair
  MATCH (:Face {entity_id: pair[0]})-[r:SAME_AS]->(:Voice {entity_id: pair[1]})
  WHERE any(x IN r.evidence WHERE x STARTS WITH $clip_key + '|')
  RETURN collect(toString(pair[0]) + ':' + toString(pair[1])) AS still
}
WITH c, before + after AS touched, still
SET c.vote_pairs = [p IN coalesce(c.vote_pairs, [])
                    WHERE NOT p IN [q IN touched | toString(q[0]) + ':' + toString(q[1])]] + still
WITH touched
UNWIND touched AS pair
RETURN DISTINCT pair[0] AS face_id, pair[1] AS voice_id
