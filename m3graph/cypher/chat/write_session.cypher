// mode: write
// params: clip_key, session_key, turns, speakers
// Marks a clip as a conversation session and links its speakers: new speakers are created with the ids the
// caller allocated (graph/allocate_ids, the entity id space shared with faces and voices); SPEAKS_IN is a
// speaker's evidence, so deleting the last session a speaker spoke in deletes the speaker. Its source's `kind`
// (m3graph/schema/sources.py, the same rule): 'notes' for a notes source, 'facts' while every session is a
// numbered facts list (its one speaker 'Facts', m3graph/ingest/chat/facts_list.py), else 'conversation'.
MATCH (c:Clip {clip_key: $clip_key})
SET c.session_key = $session_key, c.kind = 'session', c.turns = $turns
WITH c
CALL (c) {
  MATCH (c)-[:OF]->(v:Video)
  SET v.kind = CASE WHEN coalesce(v.agent_notes, false) THEN 'notes'
                    WHEN coalesce(v.kind, 'video') IN ['video', 'facts'] AND size($speakers) > 0
                         AND all(sp IN $speakers WHERE sp.as_name = 'Facts') THEN 'facts'
                    ELSE 'conversation' END
}
UNWIND $speakers AS sp
MERGE (s:Speaker {speaker_key: sp.key})
ON CREATE SET s.entity_id = sp.entity_id, s.created_at = datetime(), s.source_id = sp.source,
              s.speaker_name = sp.name, s.name = sp.name
MERGE (s)-[r:SPEAKS_IN]->(c)
SET r.turns = sp.turns, r.as_name = sp.as_name
