// mode: write
// params: clip_key, session_key, turns, speakers
// Marks a clip as a conversation session and links its speakers: new speakers are created with the ids the
// caller allocated (graph/allocate_ids, the entity id space shared with faces and voices); SPEAKS_IN is a
// speaker's evidence, so deleting the last session a speaker spoke in deletes the speaker.
MATCH (c:Clip {clip_key: $clip_key})
SET c.session_key = $session_key, c.kind = 'session', c.turns = $turns
WITH c
UNWIND $speakers AS sp
MERGE (s:Speaker {speaker_key: sp.key})
ON CREATE SET s.entity_id = sp.entity_id, s.created_at = datetime(), s.source_id = sp.source,
              s.speaker_name = sp.name, s.name = sp.name
MERGE (s)-[r:SPEAKS_IN]->(c)
SET r.turns = sp.turns, r.as_name = sp.as_name
