// mode: read
// params: video_id, clip_index
// returns: label, entity_id
// A clip already resolved keeps its mapping: re-running resolution returns it and writes nothing.
// The hint makes the per-clip seek certain: with few entities the planner otherwise may scan the Voice key index
// and expand to every observation (tests/graph/test_query_plans.py).
MATCH (o:Utterance {video_id: $video_id, clip_index: $clip_index})-[:OF]->(e:Voice)
USING INDEX o:Utterance(video_id, clip_index)
RETURN DISTINCT o.cluster_label AS label, e.entity_id AS entity_id
