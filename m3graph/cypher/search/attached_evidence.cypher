// mode: read
// params: ids, videos, before_clip, per_file
// returns: memory_id, via
// Evidence attached to search hits that the question's words cannot reach (search_node, graphdb/search.py):
// 1. a file's content: the surrogate memories (at most $per_file, the file's first ones, the same clip's first)
//    of each file a hit turn SHARED ("[shares a file: IMG_2807.jpg]" ranks on the turn's words; what the photo
//    shows is in its surrogate);
// 2. who a photo's face is: for each character whose face a file-linked hit or surrogate MENTIONS, the current
//    name fact about that character ("<face_11>'s name is Mei.", written from the turn that introduced the person,
//    usually in an earlier session, so no ranking of the later question finds it).
// Both stay in the question's scope ($videos, $before_clip); hits are not returned again. `via` is the hit that
// brought each (the best-ranked one, as $ids come best first), so a reader keeps the two together.
UNWIND range(0, size($ids) - 1) AS i
MATCH (h:Memory {memory_id: $ids[i]})
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
WITH i, h, [s IN surrogates | {m: s, via: h}] AS brought
WITH i, h, brought, CASE WHEN EXISTS { (h)-[:SHARED|DESCRIBES]->(:File) } THEN [{m: h, via: h}] ELSE [] END + brought
     AS file_linked
CALL (file_linked) {
  UNWIND file_linked AS x
  WITH x.m AS m, x.via AS via
  MATCH (m)-[:MENTIONS]->(:Face)-[:IS]->(c:Character)
  WITH DISTINCT c, via
  MATCH (e)-[:IS]->(c)
  WITH c, via, CASE WHEN e:Face THEN 'face_' WHEN e:Voice THEN 'voice_' ELSE 'speaker_' END + toString(e.entity_id)
               + ' · name' AS slot
  MATCH (n:Memory {slot_key: slot})
  WHERE n.current AND ($videos IS NULL OR n.video_id IN $videos)
    AND ($before_clip IS NULL OR n.clip_index <= $before_clip)
  WITH c, via, n ORDER BY n.created_at DESC, n.memory_id
  WITH c, via, head(collect(n)) AS n
  RETURN collect({m: n, via: via}) AS names
}
UNWIND brought + names AS a
WITH a.m AS m, a.via AS via, i
WHERE NOT m.memory_id IN $ids
WITH m, via ORDER BY i
WITH m, head(collect(via)) AS via
RETURN m.memory_id AS memory_id, via.memory_id AS via
ORDER BY m.video_id, m.clip_index, m.order_in_clip
