// mode: read
// params: ids, videos, before_clip, per_file
// returns: memory_id
// Evidence attached to search hits that the question's words cannot reach (search_node, graphdb/search.py):
// 1. a file's content: the surrogate memories (at most $per_file, the file's first ones, the same clip's first)
//    of each file a hit turn SHARED ("[shares a file: IMG_2807.jpg]" ranks on the turn's words; what the photo
//    shows is in its surrogate);
// 2. who a photo's face is: for each character whose face a file-linked hit or surrogate MENTIONS, the current
//    name fact about that character ("<face_11>'s name is Mei.", written from the turn that introduced the person,
//    usually in an earlier session, so no ranking of the later question finds it).
// Both stay in the question's scope ($videos, $before_clip); hits are not returned again.
UNWIND $ids AS id
MATCH (h:Memory {memory_id: id})
CALL (h) {
  MATCH (h)-[:SHARED]->(f:File)
  CALL (h, f) {
    MATCH (s:Memory {video_id: h.video_id})-[:DESCRIBES]->(f)
    WHERE ($before_clip IS NULL OR s.clip_index <= $before_clip)
    WITH s ORDER BY CASE WHEN s.clip_index = h.clip_index THEN 0 ELSE 1 END, s.clip_index, s.order_in_clip
    LIMIT $per_file
    RETURN s
  }
  RETURN collect(s) AS surrogates
}
WITH collect(h) AS hits, reduce(a = [], x IN collect(surrogates) | a + x) AS surrogates
WITH hits, surrogates,
     [m IN hits WHERE EXISTS { (m)-[:SHARED|DESCRIBES]->(:File) }] + surrogates AS file_linked
CALL (file_linked) {
  UNWIND file_linked AS m
  MATCH (m)-[:MENTIONS]->(:Face)-[:IS]->(c:Character)
  WITH DISTINCT c
  MATCH (e)-[:IS]->(c)
  WITH c, CASE WHEN e:Face THEN 'face_' WHEN e:Voice THEN 'voice_' ELSE 'speaker_' END + toString(e.entity_id)
          + ' · name' AS slot
  MATCH (n:Memory {slot_key: slot})
  WHERE n.current AND ($videos IS NULL OR n.video_id IN $videos)
    AND ($before_clip IS NULL OR n.clip_index <= $before_clip)
  WITH c, n ORDER BY n.created_at DESC, n.memory_id
  WITH c, head(collect(n)) AS n
  RETURN collect(n) AS names
}
WITH [m IN hits | m.memory_id] AS hit_ids, surrogates + names AS attached
UNWIND attached AS a
WITH DISTINCT a, hit_ids WHERE NOT a.memory_id IN hit_ids
RETURN a.memory_id AS memory_id
ORDER BY a.video_id, a.clip_index, a.order_in_clip
