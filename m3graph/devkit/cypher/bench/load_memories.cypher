// mode: write
// params: rows
// returns: n
// Benchmark loader: memories of existing clips with the properties memory/upsert.cypher writes for a clip's
// first write (support = this clip only, no mentions: synthetic memories name no face or voice).
UNWIND $rows AS r
MATCH (c:Clip {clip_key: r.clip_key})
CREATE (m:Memory {memory_id: r.memory_id})
SET m.created_at = datetime(), m.kind = r.kind, m.text = r.text, m.video_id = c.video_id,
    m.clip_index = c.clip_index, m.order_in_clip = r.order, m.embedding = r.embedding, m.is_equivalence = false,
    m.entity_ids = [], m.first_clip = r.clip_key, m.support_clips = [r.clip_key], m.support = 1,
    m.last_clip = r.clip_key, m.name = left(r.text, 80)
CREATE (m)-[:IN_CLIP]->(c)
RETURN count(m) AS n
