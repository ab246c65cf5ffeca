// mode: write
// params: clip_keys
// The one writer of `Clip.search_text`: the document hybrid search ranks whole clips by (BM25 over the
// `clip_text_en` full-text index). It is derived, never edited: the clip's date in words ("8 May 2023", when the
// clip has an absolute start time) and the text of the memories the clip holds (the ones search shows with it),
// in order: an index seek on (video_id, clip_index). Each memory's line ends with the dates its time expressions
// were resolved to (" [= 7 May 2023]" for "yesterday", from `event_said`/`event_means`; m3graph.dates.TimeNotes),
// so a clip is found by the date a turn meant as well as by the session's own date. Writers of memories call it,
// inside their own transaction, for every clip whose memories they changed (including the clip a retracted
// memory moved to).
UNWIND $clip_keys AS key
MATCH (c:Clip {clip_key: key})
CALL (c) {
  OPTIONAL MATCH (m:Memory {video_id: c.video_id, clip_index: c.clip_index})
  WHERE NOT m.is_equivalence
  WITH m ORDER BY m.order_in_clip, m.memory_id
  RETURN reduce(t = '', x IN collect(m.text + reduce(n = '', i IN range(0, size(coalesce(m.event_said, [])) - 1) |
         CASE WHEN trim(m.event_said[i]) = m.event_means[i] THEN n ELSE n + ' [= ' + m.event_means[i] + ']' END))
         | t + x + '\n') AS memories
}
WITH c, memories,
     CASE WHEN c.started_at IS NULL THEN ''
          ELSE toString(c.started_at.day) + ' ' + ['January', 'February', 'March', 'April', 'May', 'June', 'July',
               'August', 'September', 'October', 'November', 'December'][c.started_at.month - 1] + ' '
               + toString(c.started_at.year) + '\n' END AS date_words
SET c.search_text = date_words + memories
