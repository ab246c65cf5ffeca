// mode: read
// params: text, name_keys, name_lower, videos, before_clip, limit
// returns: char_id, rank, mentions, evidence
// Name -> characters, every candidate best first (m3graph.graphdb.search.MemorySearch.people_named): memories
// whose text holds the name (the full-text index: case-insensitive, no label scan), each read as
//  rank 3: a current name fact with this value about its subject ("<face_4>'s name is Mia.", a face's or voice's
//          tag; "Nora <speaker_5>'s name is Nora.", a speaker's name and tag),
//  rank 2: such a fact no longer current (a former name: the person was renamed since),
//  rank 3: a line of a speaker who speaks under the name (a conversation written before speakers' names were
//          facts),
//  rank 1: any other semantic memory holding the name: the characters it mentions.
// A character keeps its best rank; `mentions` counts the distinct memories that found it.
CALL db.index.fulltext.queryNodes('memory_text', $text, {limit: $limit}) YIELD node AS m, score
WITH m, score
WHERE ($videos IS NULL OR m.video_id IN $videos) AND ($before_clip IS NULL OR m.clip_index <= $before_clip)
CALL (m) {
  MATCH (m)-[:MENTIONS]->(e)
  WHERE m.kind = 'semantic' AND m.slot_key = m.subject_key + ' · name' AND m.value_key IN $name_keys
    AND (m.subject_key = CASE WHEN e:Face THEN 'face_' WHEN e:Voice THEN 'voice_' ELSE '-' END
                         + toString(e.entity_id)
         OR (e:Speaker AND m.text STARTS WITH m.slot_subject + ' <speaker_' + toString(e.entity_id) + '>'))
  RETURN e, CASE WHEN m.current THEN 3 ELSE 2 END AS rank
  UNION
  MATCH (m)-[:MENTIONS]->(e:Speaker)
  WHERE toLower(e.speaker_name) = $name_lower
  RETURN e, 3 AS rank
  UNION
  MATCH (m)-[:MENTIONS]->(e)
  WHERE m.kind = 'semantic'
  RETURN e, 1 AS rank
}
MATCH (e)-[:IS]->(c:Character)
WITH c, max(rank) AS rank, count(DISTINCT m) AS mentions, sum(score) AS weight,
     collect(DISTINCT m.memory_id)[0..5] AS evidence
RETURN c.char_id AS char_id, rank, mentions, evidence
ORDER BY rank DESC, mentions DESC, weight DESC, char_id
