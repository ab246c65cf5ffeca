// mode: write
// params: source_id, clip_key, face_ids, voice_ids, speaker_ids, new_clip, count_semantic
// returns: clip_found, entities, prior, n_semantic, vote_pairs
// Everything a clip's memory write reads first, in ONE round trip, under the video's memory lock (taken before
// any read, so concurrent writers of one video see each other's memories): whether the clip exists, which of the
// mentioned entities exist, what this clip contributed before (re-memorizing replaces it: memory/clip_state
// reads the same), how many semantic memories the video holds (exact or index deduplication) and the pairs the
// clip has voted on (`vote_pairs`, memory/votes; set to [] where absent, as memory/votes would: a writer with no
// votes and no pairs skips memory/votes, which could change nothing).
// The two reads that scan the video's memories run only when needed, so a session of a long conversation does not
// read the whole conversation back: `prior` not for a clip the caller created in this transaction (`new_clip`: no
// memory can hold its key yet; deleting a clip takes its key out of every memory's support), `n_semantic` only for
// a write with semantic memories to deduplicate (`count_semantic`; 0 otherwise).
MERGE (l:Lock {name: 'memory:' + $source_id})
SET l.touched_at = timestamp()
WITH l
OPTIONAL MATCH (c:Clip {clip_key: $clip_key})
CALL () {
  CALL () {
    UNWIND $face_ids AS id MATCH (e:Face {entity_id: id}) RETURN 'face' AS kind, e.entity_id AS entity_id
    UNION
    UNWIND $voice_ids AS id MATCH (e:Voice {entity_id: id}) RETURN 'voice' AS kind, e.entity_id AS entity_id
    UNION
    UNWIND $speaker_ids AS id MATCH (e:Speaker {entity_id: id}) RETURN 'speaker' AS kind, e.entity_id AS entity_id
  }
  RETURN collect({kind: kind, entity_id: entity_id}) AS entities
}
CALL () {
  OPTIONAL CALL () {
    WITH $new_clip AS new_clip WHERE NOT new_clip
    MATCH (m:Memory {video_id: $source_id}) WHERE $clip_key IN m.support_clips
    RETURN m
  }
  RETURN collect({memory_id: m.memory_id, kind: m.kind, support: m.support_clips, slot_key: m.slot_key}) AS prior
}
CALL () {
  OPTIONAL CALL () {
    WITH $count_semantic AS wanted WHERE wanted
    MATCH (m:Memory {video_id: $source_id}) USING INDEX m:Memory(video_id)
    WHERE m.kind = 'semantic'
    RETURN m
  }
  RETURN count(m) AS n_semantic
}
SET c.vote_pairs = coalesce(c.vote_pairs, [])
RETURN c IS NOT NULL AS clip_found, entities, prior, n_semantic, c.vote_pairs AS vote_pairs
