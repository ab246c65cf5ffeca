// mode: read
// params: videos, before_clip
// returns: n
MATCH (m:Memory)
WHERE m.video_id IN $videos AND ($before_clip IS NULL OR m.clip_index <= $before_clip)
RETURN count(m) AS n
