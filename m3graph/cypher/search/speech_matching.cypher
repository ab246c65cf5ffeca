// mode: read
// params: query, videos, before_clip, limit
// returns: source_id, clip_index, text, chars
// Said lines that may be a quoted line (reasoning/speakers.py): the memory full-text index read with the quote's
// words ($query: quoted, escaped terms from query_text.lucene_query_terms, never user syntax), kept in scope
// (sources, clips up to $before_clip), with the character of every entity each line mentions.
CALL db.index.fulltext.queryNodes('memory_text_en', $query, {limit: $limit}) YIELD node AS m
WHERE ($videos IS NULL OR m.video_id IN $videos) AND ($before_clip IS NULL OR m.clip_index <= $before_clip)
  AND m.kind = 'episodic' AND (m.text STARTS WITH '<' OR m.text CONTAINS '<speaker_')
OPTIONAL MATCH (m)-[:MENTIONS]->(e)
OPTIONAL MATCH (e)-[:IS]->(ch:Character)
WITH m, collect(CASE WHEN e IS NULL THEN null
                     ELSE [CASE WHEN e:Face THEN 'face' WHEN e:Speaker THEN 'speaker' ELSE 'voice' END, e.entity_id,
                           ch.char_id] END) AS chars
RETURN m.video_id AS source_id, m.clip_index AS clip_index, m.text AS text, chars
