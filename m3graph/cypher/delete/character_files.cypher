// mode: read
// params: char_id
// returns: source_id, clip_index, kind, label, uri
// Before a person is deleted: every observation of their entities, with the perception cluster it came from
// and its crop or audio snippet, so their files and cache entries can go once the graph delete committed.
MATCH (c:Character) WHERE c.char_id = $char_id OR $char_id IN c.aliases
MATCH (e)-[:IS]->(c)
MATCH (o)-[:OF]->(e) WHERE o:FaceObs OR o:Utterance
RETURN o.video_id AS source_id, o.clip_index AS clip_index, CASE WHEN o:FaceObs THEN 'face' ELSE 'voice' END AS kind,
       o.cluster_label AS label, coalesce(o.crop_uri, o.audio_uri) AS uri
