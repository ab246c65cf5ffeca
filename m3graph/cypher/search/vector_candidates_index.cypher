// mode: read
// params: query, n, videos, before_clip, entity_ids, clips, min_score, k
// returns: raw, lowest, rows
// Hybrid search's vector ranking through the index: the top $n hits, filtered and floored, in one row, with
// how many raw hits came back and the lowest raw score, so the caller knows whether fetching more can help.
CALL db.index.vector.queryNodes('memory_embedding', $n, $query) YIELD node, score
WITH collect({m: node, score: score}) AS hits
RETURN size(hits) AS raw, CASE WHEN size(hits) = 0 THEN null ELSE hits[size(hits) - 1].score END AS lowest,
       [h IN hits WHERE h.score >= $min_score
          AND ($videos IS NULL OR h.m.video_id IN $videos) AND ($before_clip IS NULL OR h.m.clip_index <= $before_clip)
          AND NOT h.m.is_equivalence AND ($entity_ids IS NULL OR any(e IN h.m.entity_ids WHERE e IN $entity_ids))
          AND ($clips IS NULL OR (h.m.video_id + '#' + toString(h.m.clip_index)) IN $clips)
        | {memory_id: h.m.memory_id, video_id: h.m.video_id, clip_index: h.m.clip_index,
           order: h.m.order_in_clip, score: h.score}][0..$k]
       AS rows
