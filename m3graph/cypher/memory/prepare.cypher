// mode: write
// params: source_id, clip_key, face_ids, voice_ids, speaker_ids
// returns: clip_found, entities, prior, n_semantic
// Everything a clip's memory write reads first, in ONE round trip, under the video's memory lock (taken before
// any read, so concurrent writers of one video see each other's memories): whether the clip exists, which of the
// mentioned entities exist, what this clip contributed before (re-memorizing replaces it: memory/clip_state
// reads the same) and how many semantic memories the video holds (exact or index deduplication).
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
  OPTIONAL MATCH (m:Memory {video_id: $source_id}) WHERE $clip_key IN m.support_clips
  RETURN collect({memory_id: m.memory_id, kind: m.kind, support: m.support_clips, slot_key: m.slot_key}) AS prior
}
CALL () {
  MATCH (m:Memory {video_id: $source_id}) USING INDEX m:Memory(video_id)
  WHERE m.kind = 'semantic'
  RETURN count(m) AS n_semantic
}
RETURN c IS NOT NULL AS clip_found, entities, prior, n_semantic
