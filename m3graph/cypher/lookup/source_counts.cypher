// mode: read
// params: source_id
// returns: label, n
// `stats --video`: counts of one source only, under graph/counts' labels. Faces, voices and speakers count when
// the source has evidence of them (an observation, an utterance, a turn); characters, IS, SAME_AS and CO_OCCURS
// count among those entities; memories also by kind (episodic, semantic) and `facts`: semantic memories other
// than name facts (a conversation ingested without a model holds only its speakers' names). Every row seeks by
// video_id.
CALL () {
  MATCH (c:Clip) WHERE c.video_id = $source_id RETURN count(c) AS clips
}
CALL () {
  MATCH (m:Memory) WHERE m.video_id = $source_id
  RETURN count(m) AS memories, count(CASE WHEN m.kind = 'episodic' THEN 1 END) AS episodic,
         count(CASE WHEN m.kind = 'semantic' THEN 1 END) AS semantic,
         count(CASE WHEN m.kind = 'semantic' AND coalesce(m.slot_attribute, '') <> 'name' THEN 1 END) AS facts,
         sum(COUNT { (m)-[:MENTIONS]->() }) AS mentions
}
CALL () {
  MATCH (o:FaceObs) WHERE o.video_id = $source_id
  OPTIONAL MATCH (o)-[:OF]->(f:Face)
  RETURN count(o) AS face_obs, collect(DISTINCT f) AS faces
}
CALL () {
  MATCH (u:Utterance) WHERE u.video_id = $source_id
  OPTIONAL MATCH (u)-[:OF]->(v:Voice)
  RETURN count(u) AS utterances, collect(DISTINCT v) AS voices
}
CALL () {
  MATCH (c:Clip) WHERE c.video_id = $source_id
  MATCH (s:Speaker)-[:SPEAKS_IN]->(c)
  RETURN collect(DISTINCT s) AS speakers
}
CALL (faces, voices, speakers) {
  UNWIND faces + voices + speakers AS e
  MATCH (e)-[:IS]->(ch:Character)
  RETURN count(DISTINCT ch) AS characters, count(*) AS is_rels
}
CALL (faces, voices) {
  UNWIND faces AS f
  MATCH (f)-[r:SAME_AS]->(v:Voice)
  WHERE v IN voices
  RETURN count(r) AS same_as, coalesce(sum(r.votes), 0) AS votes
}
CALL (faces) {
  UNWIND faces AS f
  MATCH (f)-[r:CO_OCCURS]->(g:Face)
  WHERE g IN faces
  RETURN count(r) AS co_occurs
}
UNWIND [['Clip', clips], ['Memory', memories], ['episodic', episodic], ['semantic', semantic], ['facts', facts],
        ['FaceObs', face_obs], ['Utterance', utterances], ['Face', size(faces)], ['Voice', size(voices)],
        ['Speaker', size(speakers)], ['Character', characters], ['SAME_AS', same_as], ['votes', votes],
        ['MENTIONS', coalesce(mentions, 0)], ['CO_OCCURS', co_occurs], ['IS', is_rels]] AS row
RETURN row[0] AS label, row[1] AS n
