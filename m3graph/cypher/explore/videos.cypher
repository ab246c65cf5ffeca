// mode: read
// params:
// returns: source_id, name, clips, duration_s, started_at, memories
// The explorer's front page: every source (video or conversation) with its size.
MATCH (v:Video)
CALL (v) {
  MATCH (c:Clip)-[:OF]->(v)
  RETURN count(c) AS clips, min(c.started_at) AS started_at
}
RETURN v.video_id AS source_id, v.name AS name, clips, v.duration_s AS duration_s, started_at,
       COUNT { MATCH (m:Memory) WHERE m.video_id = v.video_id } AS memories
ORDER BY source_id
