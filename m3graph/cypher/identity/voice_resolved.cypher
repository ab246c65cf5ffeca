// mode: read
// params: video_id, clip_index
// returns: label, entity_id
// A clip already resolved keeps its mapping: re-running resolution returns it and writes nothing.
MATCH (o:Utterance {video_id: $video_id, clip_index: $clip_index})-[:OF]->(e:Voice)
RETURN DISTINCT o.cluster_label AS label, e.entity_id AS entity_id
