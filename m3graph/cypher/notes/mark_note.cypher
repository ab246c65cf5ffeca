// mode: write
// params: clip_key
// returns: memories, speakers
// Marks a written note for readers of the graph: its clip and every memory of it as an agent note, its speaker as
// an agent (the text already says so: "Lily (agent) <speaker_N>: [agent note] ...").
MATCH (c:Clip {clip_key: $clip_key})
SET c.agent_note = true
WITH c
MATCH (m:Memory)-[:IN_CLIP]->(c)
SET m.agent_note = true
WITH c, count(m) AS memories
MATCH (s:Speaker)-[:SPEAKS_IN]->(c)
SET s.agent = true
RETURN memories, count(s) AS speakers
