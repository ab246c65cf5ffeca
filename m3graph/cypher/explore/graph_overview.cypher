// mode: read
// params: source_id, from_clip, to_clip, max_clips
// returns: clip_key, clip_index, started_at, start_s, kind, memories, people
// The graph view's overview of a source: its clips (a conversation's sessions) and, per clip, the characters its
// memories mention with how many memories mention each. The memories themselves are drawn on demand
// (explore/graph_rows for one clip), so a long conversation stays readable.
MATCH (c:Clip {video_id: $source_id})
WHERE $from_clip <= c.clip_index <= $to_clip
WITH c ORDER BY c.clip_index LIMIT $max_clips
RETURN c.clip_key AS clip_key, c.clip_index AS clip_index, c.started_at AS started_at, c.start_s AS start_s,
       c.kind AS kind, COUNT { MATCH (m:Memory)-[:IN_CLIP]->(c) } AS memories,
       COLLECT { MATCH (m:Memory)-[:IN_CLIP]->(c)
                 MATCH (m)-[:MENTIONS]->(e)-[:IS]->(ch:Character)
                 WITH ch.char_id AS char_id, count(DISTINCT m) AS n
                 RETURN [char_id, n] } AS people
