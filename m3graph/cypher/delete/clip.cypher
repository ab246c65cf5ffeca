// mode: write
// params: clip_key
// Removes everything this clip produced: its evidence nodes (with their embeddings), its episodic memories,
// its support and votes elsewhere, and the clip itself. The NEXT chain is re-linked around it.
MATCH (c:Clip {clip_key: $clip_key})
CALL (c) {
  MATCH (o)-[:IN_CLIP]->(c) WHERE o:FaceObs OR o:Utterance
  DETACH DELETE o
}
CALL (c) {
  UNWIND coalesce(c.vote_pairs, []) AS p
  WITH split(p, ':') AS ids
  MATCH (:Face {entity_id: toInteger(ids[0])})-[r:SAME_AS]->(:Voice {entity_id: toInteger(ids[1])})
  WHERE any(x IN r.evidence WHERE x STARTS WITH $clip_key + '|')
  SET r.evidence = [x IN r.evidence WHERE NOT x STARTS WITH $clip_key + '|']
  SET r.votes = size(r.evidence)
  WITH r WHERE r.votes = 0
  DELETE r
}
CALL (c) {
  UNWIND coalesce(c.cooccur_pairs, []) AS p
  WITH split(p, ':') AS ids
  MATCH (:Face {entity_id: toInteger(ids[0])})-[r:CO_OCCURS]->(:Face {entity_id: toInteger(ids[1])})
  WHERE $clip_key IN r.clips
  SET r.clips = [x IN r.clips WHERE x <> $clip_key]
  WITH r WHERE size(r.clips) = 0
  DELETE r
}
CALL (c) {
  OPTIONAL MATCH (p:Clip)-[:NEXT]->(c)
  OPTIONAL MATCH (c)-[:NEXT]->(n:Clip)
  FOREACH (_ IN CASE WHEN p IS NULL OR n IS NULL THEN [] ELSE [1] END | MERGE (p)-[:NEXT]->(n))
}
WITH c
MATCH (c)-[:OF]->(v:Video)
DETACH DELETE c
WITH v
SET v.clip_count = COUNT { (:Clip)-[:OF]->(v) }
