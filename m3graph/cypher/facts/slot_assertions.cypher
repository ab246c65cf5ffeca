// mode: read
// params: source_id, slot_keys
// returns: memory_id, slot_key, value_key, negated, changed, first_clip, start_s, order_in_clip, clip_key, clip_index, clip_start, started_at, manual
// Every assertion of these slots of one source: each memory once per clip that supports it (a fact said again in
// a later clip is newer again), with where that clip sits in its source and an analyst's override (`manual`:
// "superseded", "current" or null). graphdb/facts.py orders and walks them.
UNWIND $slot_keys AS sk
MATCH (m:Memory {video_id: $source_id, slot_key: sk})
USING INDEX m:Memory(slot_key)  // not the source's video_id: a long source has many memories
UNWIND m.support_clips AS ck
MATCH (c:Clip {clip_key: ck})
RETURN m.memory_id AS memory_id, m.slot_key AS slot_key, m.value_key AS value_key, m.negated AS negated,
       m.changed AS changed, m.first_clip AS first_clip, m.start_s AS start_s, m.order_in_clip AS order_in_clip,
       ck AS clip_key, c.clip_index AS clip_index, c.start_s AS clip_start, c.started_at AS started_at,
       m.manual_state AS manual
