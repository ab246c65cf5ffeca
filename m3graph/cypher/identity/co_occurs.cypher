// mode: write
// params: clip_key, pairs
// Faces seen in the same frame are different people: a cannot-link constraint for character formation.
UNWIND $pairs AS p
MATCH (a:Face {entity_id: p.a}), (b:Face {entity_id: p.b})
MERGE (a)-[r:CO_OCCURS]->(b)
SET r.clips = CASE WHEN $clip_key IN coalesce(r.clips, []) THEN r.clips ELSE coalesce(r.clips, []) + $clip_key END
