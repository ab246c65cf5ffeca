// mode: write
// params: clip_keys
// The one writer of `Clip.search_text`: the document hybrid search ranks whole clips by (BM25 over the
// `clip_text_en` full-text index). It is derived, never edited: the clip's date in words ("8 May 2023", when the
// clip has an absolute start time) and the text of the memories the clip holds (the ones search shows with it),
// in order: an index seek on (video_id, clip_index). Writers of memories call it, inside their own transaction,
// for every clip whose memories they changed (including the clip a retracted memory moved to).
UNWIND $clip_keys AS key
MATCH (c:Clip {clip_key: key})
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
