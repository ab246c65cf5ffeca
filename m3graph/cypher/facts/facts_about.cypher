// mode: read
// params: source_id, thing_keys, all_versions, k
// returns: memory_id, thing_key
// The facts of one source about these named things (ABOUT their subject), current ones unless $all_versions,
// in event order: the next hop of a multi-hop question and the `facts_about` tool.
UNWIND $thing_keys AS key
MATCH (t:Thing {thing_key: key})<-[:ABOUT]-(m:Memory)
WHERE m.video_id = $source_id AND ($all_versions OR m.current)
WITH key, m ORDER BY m.valid_from_order[0], m.memory_id
WITH key, collect(m.memory_id)[..$k] AS ids
UNWIND ids AS memory_id
RETURN memory_id, key AS thing_key
