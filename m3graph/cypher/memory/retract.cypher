// mode: write
// params: clip_key, memory_ids
// Removes this clip's support from memories it no longer produces. A memory left with no support is
// deleted; one whose first clip withdrew moves to its earliest remaining supporting clip.
UNWIND $memory_ids AS id
MATCH (m:Memory {memory_id: id})
SET m.support_clips = [k IN m.support_clips WHERE k <> $clip_key]
SET m.support = size(m.support_clips)
WITH m
CALL (m) {
  WITH m WHERE m.support > 0
  OPTIONAL MATCH (m)-[rel:MENTIONS]->()
  SET rel.weight = toFloat(m.support)
}
CALL (m) {
  WITH m WHERE m.support > 0 AND m.first_clip = $clip_key
  WITH m, reduce(best = null, k IN m.support_clips |
         CASE WHEN best IS NULL OR toInteger(split(k, '#')[1]) < toInteger(split(best, '#')[1]) THEN k ELSE best END) AS earliest
  MATCH (m)-[old:IN_CLIP]->(:Clip)
  DELETE old
  WITH m, earliest
  MATCH (c:Clip {clip_key: earliest})
  SET m.first_clip = earliest, m.clip_index = c.clip_index
  MERGE (m)-[:IN_CLIP]->(c)
}
CALL (m) {
  WITH m WHERE m.support = 0
  DETACH DELETE m
}
