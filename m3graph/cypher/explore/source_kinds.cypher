// mode: read
// params:
// returns: source_id, kind, sessions
// What each source is, for the front page: its kind as ingestion recorded it and how many of its clips are
// conversation sessions (older graphs have no kind on the source, only on its session clips).
MATCH (v:Video)
RETURN v.video_id AS source_id, v.kind AS kind,
       COUNT { MATCH (c:Clip)-[:OF]->(v) WHERE c.kind = 'session' } AS sessions
