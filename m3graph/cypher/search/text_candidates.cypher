// mode: read
// params: text, n, videos, before_clip, entity_ids, clips, k
// returns: raw, rows
// Hybrid search's full-text (BM25) ranking over the English-analysed index: the top $n hits, filtered, in one
// row, with how many raw hits came back (fewer than $n: the index has no more).
CALL db.index.fulltext.queryNodes('memory_text_en', $text, {limit: $n}) YIELD node, score
WITH collect({m: node, score: score}) AS hits
RETURN size(hits) AS raw,
       [h IN hits WHERE ($videos IS NULL OR h.m.video_id IN $videos)
          AND ($before_clip IS NULL OR h.m.clip_index <= $before_clip)
          AND NOT h.m.is_equivalence AND ($entity_ids IS NULL OR any(e IN h.m.entity_ids WHERE e IN $entity_ids))
          AND ($clips IS NULL OR (h.m.video_id + '#' + toString(h.m.clip_index)) IN $clips)
        | {memory_id: h.m.memory_id, video_id: h.m.video_id, clip_index: h.m.clip_index,
           order: h.m.order_in_clip, score: h.score}][0..$k]
       AS rows
