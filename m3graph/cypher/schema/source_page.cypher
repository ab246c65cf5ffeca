// mode: read
// params: after, n
// returns: video_id, source_id, labelled, kind, notes, sessions, speakers
// Migration 17: one page of sources (the `Video` nodes every source has had) in video_id order (a seek on the
// video_key constraint's index), with what tells their kind apart: the notes mark, the sessions among their clips
// and the names their speakers spoke under (m3graph/schema/sources.py decides the kind).
MATCH (v:Video)
WHERE v.video_id > $after
WITH v ORDER BY v.video_id LIMIT $n
RETURN v.video_id AS video_id, v.source_id AS source_id, v:Source AS labelled, v.kind AS kind,
       coalesce(v.agent_notes, false) AS notes,
       COUNT { MATCH (c:Clip)-[:OF]->(v) WHERE c.session_key IS NOT NULL } AS sessions,
       COLLECT { MATCH (s:Speaker)-[r:SPEAKS_IN]->(:Clip)-[:OF]->(v)
                 RETURN DISTINCT coalesce(r.as_name, s.speaker_name, '') } AS speakers
ORDER BY video_id
