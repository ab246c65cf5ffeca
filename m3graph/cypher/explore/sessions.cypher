// mode: read
// params: source_id
// returns: clip_index, started_at, turns, state, reason, memories, speakers
// A conversation's sessions in order: when each began, how many turns it has and who spoke in it (the speaker,
// its character and its turns there, most turns first). A video's clips are no sessions and are not returned.
MATCH (c:Clip {video_id: $source_id})
WHERE c.kind = 'session'
RETURN c.clip_index AS clip_index, c.started_at AS started_at, c.turns AS turns,
       coalesce(c.state, c.status) AS state, coalesce(c.state_reason, c.status_detail) AS reason,
       COUNT { MATCH (m:Memory)-[:IN_CLIP]->(c) } AS memories,
       COLLECT { MATCH (s:Speaker)-[r:SPEAKS_IN]->(c)
                 OPTIONAL MATCH (s)-[:IS]->(ch:Character)
                 RETURN {entity_id: s.entity_id, name: s.speaker_name, char_id: ch.char_id, turns: r.turns}
                 ORDER BY r.turns DESC } AS speakers
ORDER BY clip_index
