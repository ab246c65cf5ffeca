// mode: write
// params: clip_keys
// The one writer of `Clip.search_text`: the document hybrid search ranks whole clips by (BM25 over the
// `clip_text_en` full-text index). It is derived, never edited: the clip's date in words ("8 May 2023", when the
// clip has an absolute start time) and the text of every memory the clip supports, in order. Writers of
// memories call it for the clips whose memories they changed, inside their own transaction.
UNWIND $clip_keys AS key
MATCH (c:Clip {clip_key: key})
CALL (c) {
  OPTIONAL MATCH (m:Memory {video_id: c.video_id})
  WHERE c.clip_key IN m.support_clips AND NOT m.is_equivalence
  WITH m ORDER BY m.clip_index, m.order_in_clip, m.memory_id
  RETURN reduce(t = '', x IN collect(m.text) | t + x + '\n') AS memories
}
WITH c, memories,
     CASE WHEN c.started_at IS NULL THEN ''
          ELSE toString(c.started_at.day) + ' ' + ['January', 'February', 'March', 'April', 'May', 'June', 'July',
               'August', 'September', 'October', 'November', 'December'][c.started_at.month - 1] + ' '
               + toString(c.started_at.year) + '\n' END AS date_words
SET c.search_text = date_words + memories
