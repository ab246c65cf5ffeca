// mode: read
// params: memory_ids, before_clip, all_versions, as_of_at, as_of_video, as_of_order, k
// returns: memory_id, source_id, from_id
// A multi-hop question's next hop: the facts ABOUT the things these facts NAME (their values: the author a fact
// names is the subject of the next one), shown as the search shows facts (the current version by default, every
// version with $all_versions, the one valid at $as_of_at / at $as_of_order of $as_of_video; search/ranked has the
// same rule), never one first said after $before_clip. At most $k per fact, in event order. Things are keyed
// within one source, so a hop never leaves the source of the fact it starts from.
UNWIND $memory_ids AS id
MATCH (m:Memory {memory_id: id})-[:NAMES]->(:Thing)<-[:ABOUT]-(n:Memory)
WHERE n.memory_id <> id AND NOT coalesce(n.is_equivalence, false)
  AND ($before_clip IS NULL OR n.clip_index <= $before_clip)
  AND ($all_versions OR n.slot_key IS NULL OR CASE
    WHEN $as_of_at IS NOT NULL AND size(coalesce(n.valid_from_at, [])) > 0
      THEN any(i IN range(0, size(n.valid_from_at) - 1)
               WHERE n.valid_from_at[i] <= $as_of_at AND $as_of_at < n.valid_to_at[i])
    WHEN $as_of_order IS NOT NULL AND n.video_id = $as_of_video AND n.valid_from_order IS NOT NULL
      THEN any(i IN range(0, size(n.valid_from_order) - 1)
               WHERE n.valid_from_order[i] <= $as_of_order AND $as_of_order < n.valid_to_order[i])
    ELSE coalesce(n.current, true) END)
WITH id, n ORDER BY n.valid_from_order[0], n.clip_index, n.order_in_clip, n.memory_id
WITH id, collect(DISTINCT n)[..$k] AS found
UNWIND found AS n
RETURN n.memory_id AS memory_id, n.video_id AS source_id, id AS from_id
