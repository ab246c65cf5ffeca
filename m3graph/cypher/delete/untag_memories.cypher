// mode: write
// params: rows
// Photo surrogates rewritten without a deleted person's face tags: new text (and the name shown for it), the
// entities the text still names, and the tags' positions in it (the MENTIONS edges to the deleted entities go
// with the entities). The embedding stays: it was computed from the text before any face tag was added.
UNWIND $rows AS r
MATCH (m:Memory {memory_id: r.memory_id})
SET m.text = r.text, m.name = left(r.text, 80), m.entity_ids = r.entity_ids
WITH m, r
UNWIND r.mentions AS x
MATCH (m)-[rel:MENTIONS]->(e {entity_id: x.id})
SET rel.position = x.position
