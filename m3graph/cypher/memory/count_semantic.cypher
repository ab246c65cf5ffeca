// mode: read
// params: video_id
// returns: n
MATCH (m:Memory {video_id: $video_id}) WHERE m.kind = 'semantic' RETURN count(m) AS n
