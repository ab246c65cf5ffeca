// mode: read
// params: videos, since, until
// returns: clip_key
// Clips whose absolute start lies in [since, until): the time filter of search (clips without a start are out).
MATCH (c:Clip)
WHERE c.started_at IS NOT NULL AND ($videos IS NULL OR c.video_id IN $videos)
  AND ($since IS NULL OR c.started_at >= $since) AND ($until IS NULL OR c.started_at < $until)
RETURN c.clip_key AS clip_key
ORDER BY clip_key
