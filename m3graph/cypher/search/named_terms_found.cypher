// mode: read
// params: terms, videos, before_clip, cap
// returns: term, found
// Whether any memory in scope (sources $videos, clips up to $before_clip) mentions each name a question gives
// (reasoning/premise.py). Each $terms entry is {term, query}; the query is one quoted, escaped phrase
// (query_text.lucene_phrase), never user syntax. The index is read up to $cap hits per name; a name with $cap hits
// or more counts as mentioned (the check only ever withholds an answer when it is sure).
UNWIND $terms AS t
CALL (t) {
  CALL db.index.fulltext.queryNodes('memory_text_en', t.query, {limit: $cap}) YIELD node AS m
  RETURN count(m) AS hits,
         count(CASE WHEN ($videos IS NULL OR m.video_id IN $videos)
                      AND ($before_clip IS NULL OR m.clip_index <= $before_clip) THEN 1 END) AS in_scope
}
RETURN t.term AS term, in_scope > 0 OR hits >= $cap AS found
