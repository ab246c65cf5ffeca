// mode: write
// params: source_id, session_key, clip_key, keys
// returns: stored, clip_exists, speakers
// The start of a session's write, in ONE round trip (graphdb/chat_sessions.py): the source's chat lock (the node
// graph/lock takes for `chat:<source>`) before any read, so concurrent writers of one source see each other's
// sessions; whether this session is stored already (one clip of the source with its key, not every clip of the
// source); whether the session's clip exists before the session writes it (where it does not, the memory write
// need not look for the clip's earlier memories: memories.write_clip_memories `new_clip`); and the persistent
// speakers by key ("source|name", chat/speakers_by_key).
MERGE (l:Lock {name: 'chat:' + $source_id})
SET l.touched_at = timestamp()
WITH l
CALL () {
  OPTIONAL MATCH (c:Clip) WHERE c.video_id = $source_id AND c.session_key = $session_key
  RETURN count(c) > 0 AS stored
}
CALL () {
  OPTIONAL MATCH (c:Clip {clip_key: $clip_key})
  RETURN c IS NOT NULL AS clip_exists
}
CALL () {
  UNWIND $keys AS key
  MATCH (s:Speaker {speaker_key: key})
  RETURN collect({key: key, entity_id: s.entity_id}) AS speakers
}
RETURN stored, clip_exists, speakers
