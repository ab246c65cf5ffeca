// mode: write
// params: first, last, things, prefix
// bench/event_lookup.py: sources `first`..`last` - 1 named prefix + i, each with `things` named things of its own
// ('place 0' ... in the first source, 'place <things>' ... in the next) and one slotted fact naming each, as
// facts/link_things writes them (thing_key, name_key): a name most sources never use, as in real graphs.
UNWIND range($first, $last - 1) AS i
MERGE (v:Video:Source {video_id: $prefix + toString(i)})
SET v.source_id = v.video_id, v.kind = 'conversation'
WITH v, i
UNWIND range(0, $things - 1) AS j
WITH v, 'place ' + toString(i * $things + j) AS name
MERGE (t:Thing {thing_key: v.video_id + '|' + name})
SET t.video_id = v.video_id, t.name = name, t.name_key = name
MERGE (m:Memory {memory_id: v.video_id + '/' + name})
SET m.video_id = v.video_id, m.clip_index = 0, m.kind = 'semantic', m.is_equivalence = false,
    m.text = 'User lives in ' + name + '.', m.slot_key = 'user · live in', m.slot_subject = 'User',
    m.slot_value = name, m.current = true
MERGE (m)-[:NAMES]->(t)
