// mode: read
// params: ids, per
// returns: entity_id, snippets
// The first utterances of each voice entity, with their audio snippet and transcript.
UNWIND $ids AS id
MATCH (v:Voice {entity_id: id})
CALL (v) {
  MATCH (u:Utterance)-[:OF]->(v)
  WITH u ORDER BY u.video_id, u.clip_index, u.start_s LIMIT $per
  RETURN collect({uri: u.audio_uri, text: u.text, source_id: u.video_id, clip_index: u.clip_index,
                  start_s: u.start_s}) AS snippets
}
RETURN id AS entity_id, snippets
