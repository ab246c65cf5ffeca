// mode: write
// params: clip_key, pairs
// Faces seen in the same frame are different people: a cannot-link constraint for character formation.
// The clip lists its pairs (`cooccur_pairs`) so deleting it never scans all CO_OCCURS edges.
MATCH (c:Clip {clip_key: $clip_key})
UNWIND $pairs AS p
MATCH (a:Face {entity_id: p.a}), (b:Face {entity_id: p.b})
MERGE (a)-[r:CO_OCCURS]->(b)
SET r.clips = CASE WHEN $clip_key IN coalesce(r.clips, []) THEN r.clips ELSE coalesce(r.clips, []) + $clip_key END
WITH c, toString(p.a) + ':' + toString(p.b) AS key
SET c.cooccur_pairs = CASE WHEN key IN coalesce(c.cooccur_pairs, []) THEN c.cooccur_pairs
                           ELSE coalesce(c.cooccur_pairs, []) + key END
