// mode: read
// params: ids
// returns: entity_id, key, uri, quality, candidate
// Every observation of these voice entities with the file it was embedded from (`audio_uri`; null when none was kept).
UNWIND $ids AS id
MATCH (o:Utterance)-[:OF]->(e:Voice {entity_id: id})
RETURN e.entity_id AS entity_id, o.utt_key AS key, o.audio_uri AS uri, o.quality AS quality,
       coalesce(o.candidate, false) AS candidate
ORDER BY entity_id, key
