// mode: write
// params: video_id, clip_index, state, reason, only_from
// returns: state
// The one writer of a clip's progress. `only_from` (a list, or null for "any") guards forward-only moves:
// marking a clip planned or perceived must not undo a resolve or a memorization that already happened.
// Legacy clips (written before states existed) carry `status`; 'done' reads as memorized.
MATCH (c:Clip {clip_key: $video_id + '#' + toString($clip_index)})
WITH c, coalesce(c.state, CASE c.status WHEN 'done' THEN 'memorized' ELSE null END) AS current
WHERE $only_from IS NULL OR current IS NULL OR current IN $only_from
SET c.state = $state, c.state_reason = $reason, c.state_at = datetime()
REMOVE c.status, c.status_detail, c.status_at
RETURN c.state AS state
