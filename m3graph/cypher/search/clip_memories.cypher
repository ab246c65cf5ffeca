// mode: read
// params: clips, episodic_only
// returns: source_id, clip_index, start_s, end_s, started_at, memories
// All memories of the given clips in order, with the character of every mentioned entity, so tags are
// rendered from structure rather than by rewriting text.
UNWIND $clips AS c
MATCH (cl:Clip {clip_key: c.source_id + '#' + toString(c.clip_index)})
CALL (c) {
  MATCH (m:Memory {video_id: c.source_id, clip_index: c.clip_index})
  WHERE NOT m.is_equivalence AND (NOT $episodic_only OR m.kind = 'episodic')
  OPTIONAL MATCH (m)-[:MENTIONS]->(e)
  OPTIONAL MATCH (e)-[:IS]->(ch:Character)
  WITH m, collect(CASE WHEN e IS NULL THEN null
                       ELSE [CASE WHEN e:Face THEN 'face' WHEN e:Speaker THEN 'speaker' ELSE 'voice' END, e.entity_id, ch.char_id] END) AS chars
  ORDER BY m.order_in_clip, m.memory_id
  RETURN collect({memory_id: m.memory_id, kind: m.kind, text: m.text, order: m.order_in_clip, chars: chars,
                  source_ids: m.source_ids, event_said: m.event_said,
                  event_means: m.event_means, event_first: m.event_first, event_last: m.event_last,
                  source_id: m.video_id, slot_key: m.slot_key, slot_value: m.slot_value, current: m.current,
                  superseded_note: m.superseded_note, valid_from_order: m.valid_from_order,
                  valid_to_order: m.valid_to_order, valid_from_at: m.valid_from_at, valid_to_at: m.valid_to_at})
         AS memories
}
RETURN c.source_id AS source_id, c.clip_index AS clip_index, cl.start_s AS start_s, cl.end_s AS end_s,
       cl.started_at AS started_at, memories
