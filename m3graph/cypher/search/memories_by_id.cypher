// mode: read
// params: ids
// returns: memory_id, kind, text, source_id, clip_index, order, start_s, end_s, started_at, source_ids, event_said, event_means, event_first, event_last, slot_key, slot_value, current, superseded_note, chars
UNWIND $ids AS id
MATCH (m:Memory {memory_id: id})
OPTIONAL MATCH (cl:Clip {clip_key: m.video_id + '#' + toString(m.clip_index)})
OPTIONAL MATCH (m)-[:MENTIONS]->(e)
OPTIONAL MATCH (e)-[:IS]->(ch:Character)
RETURN m.memory_id AS memory_id, m.kind AS kind, m.text AS text, m.video_id AS source_id,
       m.clip_index AS clip_index, m.order_in_clip AS order, cl.start_s AS start_s, cl.end_s AS end_s,
       cl.started_at AS started_at, m.source_ids AS source_ids, m.event_said AS event_said,
       m.event_means AS event_means, m.event_first AS event_first, m.event_last AS event_last,
       m.slot_key AS slot_key, m.slot_value AS slot_value, m.current AS current,
       m.superseded_note AS superseded_note,
       collect(CASE WHEN e IS NULL THEN null
                    ELSE [CASE WHEN e:Face THEN 'face' WHEN e:Speaker THEN 'speaker' ELSE 'voice' END, e.entity_id, ch.char_id] END) AS chars
