// mode: write
// params: video_id
// returns: deleted
OPTIONAL MATCH (v:Video {video_id: $video_id})
CALL (v) {
  OPTIONAL MATCH (m:Memory {video_id: $video_id})
  DETACH DELETE m
}
WITH v WHERE v IS NOT NULL
DETACH DELETE v
RETURN 1 AS deleted
