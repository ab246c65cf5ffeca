// mode: write
// params: rows
// The named things a fact is about (ABOUT, its subject) and names (NAMES, its value), keyed by normalised name
// within the source (`name_key` is that name alone, for lookups across sources): the hops a multi-hop question
// follows (the author of X -> their spouse -> ...). A memory rewritten with another statement loses its old links
// first.
UNWIND $rows AS r
MATCH (m:Memory {memory_id: r.memory_id})
CALL (m) {
  MATCH (m)-[old:ABOUT|NAMES]->(:Thing)
  DELETE old
}
WITH m, r WHERE r.subject_thing IS NOT NULL
MERGE (s:Thing {thing_key: r.subject_thing})
ON CREATE SET s.video_id = r.source_id, s.name = r.slot_subject, s.name_key = r.subject_key
MERGE (v:Thing {thing_key: r.value_thing})
ON CREATE SET v.video_id = r.source_id, v.name = r.slot_value, v.name_key = r.value_key
MERGE (m)-[:ABOUT]->(s)
MERGE (m)-[:NAMES]->(v)
