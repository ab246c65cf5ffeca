// mode: write
// params: video_id, clip_index, start_s, end_s, uri, started_at, video_name
// Video and Clip keyed by (video, clip); NEXT links to the neighbours that already exist, so clips may
// arrive out of order and re-running changes nothing.
MERGE (v:Video {video_id: $video_id})
ON CREATE SET v.created_at = datetime(), v.name = $video_name
MERGE (c:Clip {clip_key: $video_id + '#' + toString($clip_index)})
ON CREATE SET c.created_at = datetime()
SET c.video_id = $video_id, c.clip_index = $clip_index, c.start_s = $start_s, c.end_s = $end_s, c.uri = $uri,
    c.started_at = $started_at,
    c.name = $video_name + ' #' + toString($clip_index) + ' [' + toString(toInteger($start_s)) + '-' + toString(toInteger($end_s)) + 's]'
MERGE (c)-[:OF]->(v)
WITH v, c
SET v.clip_count = COUNT { (:Clip)-[:OF]->(v) },
    v.duration_s = CASE WHEN coalesce(v.duration_s, 0.0) < $end_s THEN $end_s ELSE v.duration_s END
WITH c
OPTIONAL MATCH (p:Clip {clip_key: $video_id + '#' + toString($clip_index - 1)})
OPTIONAL MATCH (n:Clip {clip_key: $video_id + '#' + toString($clip_index + 1)})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | MERGE (p)-[:NEXT]->(c))
FOREACH (_ IN CASE WHEN n IS NULL THEN [] ELSE [1] END | MERGE (c)-[:NEXT]->(n))
