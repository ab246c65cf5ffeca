// mode: read
// params: video_id
// returns: n
// Per video, always: without the hint the planner may seek the `kind` index instead and read every video's
// semantic memories, or scan an index on a graph whose statistics are young (tests/test_query_plans.py).
MATCH (m:Memory {video_id: $video_id}) USING INDEX m:Memory(video_id)
WHERE m.kind = 'semantic' RETURN count(m) AS n
