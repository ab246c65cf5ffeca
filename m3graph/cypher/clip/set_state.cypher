// mode: write
// params: clips, state, reason, only_from
// returns: clip_key, state
// The one writer of a clip's progress, for a batch of clips ({video_id, clip_index} each). `only_from` (a list,
// or null for "any") guards forward-only moves: marking a clip planned or perceived must not undo a resolve or a
// memorization that already happened. Legacy clips (written before states existed) carry `status`; 'done' reads
// as memorized. Returns a row per clip that was set.
UNWIND $clips AS k
MATCH (c:Clip {clip_key: k.source_id + '#' + toString(k.clip_index)})
WITH c, coalesce(c.state, CASE c.status WHEN 'done' THEN 'memorized' ELSE null END) AS current
WHERE $only_from IS NULL OR current IS NULL OR current IN $only_from
SET c.state = $state, c.state_reason = $reason, c.state_at = datetime()
REMOVE c.status, c.status_detail, c.status_at
RETURN c.clip_key AS clip_key, c.state AS state
