// mode: read
// params: videos, before_clip, cap
// returns: source_id, clip_index, text, chars
// Lines somebody said, in scope (reasoning/speakers.py counts who speaks). A said line starts with its speaker's
// tag, "<voice_8> says: ..." (video), or names its speaker, "Ann <speaker_3>: ..." (conversation); the Python side
// reads the speaker from that structure. Per source, through the video_id index; at most $cap lines.
UNWIND $videos AS vid
MATCH (m:Memory {video_id: vid})
USING INDEX m:Memory(video_id)  // not `kind`, which reads every source's memories
WHERE ($before_clip IS NULL OR m.clip_index <= $before_clip) AND m.kind = 'episodic'
  AND (m.text STARTS WITH '<' OR m.text CONTAINS '<speaker_')
WITH m LIMIT $cap
OPTIONAL MATCH (m)-[:MENTIONS]->(e)
OPTIONAL MATCH (e)-[:IS]->(ch:Character)
WITH m, collect(CASE WHEN e IS NULL THEN null
                     ELSE [CASE WHEN e:Face THEN 'face' WHEN e:Speaker THEN 'speaker' ELSE 'voice' END, e.entity_id,
                           ch.char_id] END) AS chars
RETURN m.video_id AS source_id, m.clip_index AS clip_index, m.text AS text, chars
