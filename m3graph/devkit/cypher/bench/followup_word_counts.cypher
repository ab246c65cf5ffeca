// mode: read
// params: words, videos, cap
// returns: word, n
// How many memories of the scope hold each candidate follow-up word (its document frequency, counted up to $cap
// full-text hits): a word most lines hold ("wow", "awesome") names no second session (bench/search_followup.py).
// Each $words entry is {word, query}; the query is one quoted, escaped term (lucene_query_terms), never user syntax.
UNWIND $words AS w
CALL (w) {
  CALL db.index.fulltext.queryNodes('memory_text_en', w.query, {limit: $cap}) YIELD node AS m
  WHERE $videos IS NULL OR m.video_id IN $videos
  RETURN count(m) AS n
}
RETURN w.word AS word, n
