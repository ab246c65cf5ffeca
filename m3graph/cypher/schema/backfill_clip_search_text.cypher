// mode: schema
// Migration 10: derives `Clip.search_text` for clips written before it existed (the same derivation as
// clip/refresh_search_text), in batches of transactions so a large graph never holds one huge transaction.
MATCH (c:Clip) WHERE c.search_text IS NULL
CALL (c) {
  CALL (c) {
    OPTIONAL MATCH (m:Memory {video_id: c.video_id, clip_index: c.clip_index})
    WHERE NOT m.is_equivalence
    WITH m ORDER BY m.order_in_clip, m.memory_id
    RETURN reduce(t = '', x IN collect(m.text) | t + x + '\n') AS memories
  }
  WITH c, memories,
       CASE WHEN c.started_at IS NULL THEN ''
            ELSE toString(c.started_at.day) + ' ' + ['January', 'February', 'March', 'April', 'May', 'June', 'July',
                 'August', 'September', 'October', 'November', 'December'][c.started_at.month - 1] + ' '
                 + toString(c.started_at.year) + '\n' END AS date_words
  SET c.search_text = date_words + memories
} IN TRANSACTIONS OF 500 ROWS
