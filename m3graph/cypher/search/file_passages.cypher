// mode: read
// params: ids, max_files, videos, before_clip, query, terms, min_score, vector_weight, k, exclude
// returns: sha256, first, surrogates, total, passages
// The best passages inside each file the shown memories reach (issue 39, graphdb/passages.py), in one round trip.
// 1. Reached files: the file a shown surrogate DESCRIBES or a shown turn SHARED; $ids come best first, so a file
//    ranks by the first memory that reaches it (`first`); at most $max_files. `surrogates`: the shown ones.
// 2. Its passages (surrogate memories in the question's scope) ranked by the product's hybrid fusion
//    (search/ranked): the vector cosine, floored at $min_score (index scale (1+cos)/2) and normalised by the
//    file's best, plus BM25 over the file's own passages (the file is the collection: $terms are the query's
//    stemmed words, matched in the lower-cased text; idf from how many of the file's passages hold each),
//    normalised by the best, weighted $vector_weight against 1 - $vector_weight.
// 3. The best $k not in $exclude (passages shown in earlier rounds), best first, each with its clip and the
//    rendering fields of search/memories_by_id; a file whose passages were all shown still comes back (empty).
UNWIND range(0, size($ids) - 1) AS i
MATCH (h:Memory {memory_id: $ids[i]})-[r:DESCRIBES|SHARED]->(f:File)
WITH f, min(i) AS first, collect(CASE WHEN type(r) = 'DESCRIBES' THEN h.memory_id END) AS surrogates
ORDER BY first
LIMIT $max_files
CALL (f) {
  MATCH (m:Memory)-[:DESCRIBES]->(f)
  WHERE ($videos IS NULL OR m.video_id IN $videos) AND ($before_clip IS NULL OR m.clip_index <= $before_clip)
  RETURN collect(m) AS ms
}
WITH f, first, surrogates, ms, size(ms) AS n
WHERE n > 0
CALL (ms, n) {
  WITH ms, n, reduce(t = 0.0, m IN ms | t + size(m.text)) / n AS avg_len
  WITH ms, n, avg_len, [w IN $terms | {w: w, df: size([m IN ms WHERE toLower(m.text) CONTAINS w])}] AS dfs
  UNWIND ms AS m
  WITH n, m, avg_len, dfs, toLower(m.text) AS low, vector.similarity.cosine(m.embedding, $query) AS s
  WITH m, s, reduce(b = 0.0, d IN dfs | b + CASE WHEN d.df = 0 THEN 0.0 ELSE
         log(1.0 + (n - d.df + 0.5) / (d.df + 0.5))
         * (size(split(low, d.w)) - 1) * 2.2
         / ((size(split(low, d.w)) - 1) + 1.2 * (0.25 + 0.75 * size(low) / avg_len)) END) AS bm25
  WITH collect({m: m, s: s, t: bm25}) AS scored, max(s) AS vbest, max(bm25) AS tbest
  UNWIND scored AS x
  WITH x.m AS m, 2.0 * x.s - 1.0 AS cos,
       $vector_weight * CASE WHEN x.s < $min_score THEN 0.0 WHEN vbest > $min_score
                             THEN (x.s - $min_score) / (vbest - $min_score) ELSE 1.0 END
       + (1.0 - $vector_weight) * CASE WHEN tbest > 0 THEN x.t / tbest ELSE 0.0 END AS fused
  WHERE NOT m.memory_id IN $exclude
  WITH m, cos, fused ORDER BY fused DESC, cos DESC, m.order_in_clip
  LIMIT $k
  OPTIONAL MATCH (cl:Clip {clip_key: m.video_id + '#' + toString(m.clip_index)})
  OPTIONAL MATCH (m)-[:MENTIONS]->(e)
  OPTIONAL MATCH (e)-[:IS]->(ch:Character)
  WITH m, cos, fused, cl, collect(CASE WHEN e IS NULL THEN null
        ELSE [CASE WHEN e:Face THEN 'face' WHEN e:Speaker THEN 'speaker' ELSE 'voice' END, e.entity_id, ch.char_id]
        END) AS chars
  ORDER BY fused DESC, cos DESC, m.order_in_clip
  RETURN collect({memory_id: m.memory_id, kind: m.kind, text: m.text, order: m.order_in_clip, chars: chars,
                  source_id: m.video_id, clip_index: m.clip_index, source_ids: m.source_ids, cos: cos,
                  fused: fused, start_s: cl.start_s, end_s: cl.end_s, started_at: cl.started_at}) AS passages
}
RETURN f.sha256 AS sha256, first, surrogates, n AS total, passages
ORDER BY first
