// mode: read
// params: query, text, clip_text, videos, before_clip, max_clip, entity_ids, clips, exact, min_score, n, n_raw, vector_weight, context_weight, clip_text_weight, clip_prior, by_clip, exclude, k, episodic_only
// returns: video_id, clip_index, start_s, end_s, started_at, score, cosine, memories
// ranked.cypher for Neo4j 2026.x, where the vector index filters INSIDE the index (Cypher 25 SEARCH ... WHERE on
// the properties migration 8 declares), one SEARCH per video, $max_clip = before_clip or the largest integer;
// Lucene answers a selective filter by an exact scan of the admitted vectors. Everything else is ranked.cypher's:
// 1. Vector ranking: an exact cosine scan of the filtered memories ($exact: a small candidate set, or a
//    character/time-window filter the index cannot apply), else the vector index, filtered inside it. Floored at $min_score (index scale (1+cos)/2); the best $n are kept.
// 2. Full-text (BM25) rankings when $text is given, filtered the same way: of memories (`memory_text_en`) and of
//    whole clips as documents (`clip_text_en` over Clip.search_text: the clip's date in words and its memories).
// 3. Memory score: each memory ranking scaled by its best hit ((s - floor) / (best - floor); bm25 / best), mixed
//    with $vector_weight (1.0 when nothing matched the text), plus $context_weight of the scores of the lines just
//    before and after it in its clip (neighbours in (video, clip, order) order of the fused list).
// 4. Clip score: (1 - $clip_text_weight) x its best memory's score / the best of them + $clip_text_weight x the
//    clip's BM25 / the best clip BM25. $by_clip: the best $k clips not in $exclude, with all their memories.
//    Otherwise memories rank by their score + $clip_prior x their clip's score / the best clip score, and the
//    best $k come back grouped by clip.
CYPHER 25
CALL (){
  WITH 1 AS one WHERE $exact
  MATCH (m:Memory)
  WHERE m.video_id IN $videos AND ($before_clip IS NULL OR m.clip_index <= $before_clip) AND NOT m.is_equivalence
    AND ($entity_ids IS NULL OR any(e IN m.entity_ids WHERE e IN $entity_ids))
    AND ($clips IS NULL OR (m.video_id + '#' + toString(m.clip_index)) IN $clips)
  WITH m, vector.similarity.cosine(m.embedding, $query) AS s
  WHERE s >= $min_score
  WITH m, s ORDER BY s DESC, m.memory_id LIMIT $n
  RETURN collect({m: m, s: s}) AS exact_hits
}
CALL (){
  WITH 1 AS one WHERE NOT $exact
  UNWIND CASE WHEN $videos IS NULL THEN [null] ELSE $videos END AS vid
  CALL (vid) {
    WITH vid WHERE vid IS NULL
    MATCH (m:Memory)
      SEARCH m IN (VECTOR INDEX memory_embedding FOR $query
                   WHERE m.clip_index <= $max_clip AND m.is_equivalence = false LIMIT $n) SCORE AS s
    RETURN m, s
    UNION ALL
    WITH vid WHERE vid IS NOT NULL
    MATCH (m:Memory)
      SEARCH m IN (VECTOR INDEX memory_embedding FOR $query
                   WHERE m.video_id = vid AND m.clip_index <= $max_clip AND m.is_equivalence = false LIMIT $n) SCORE AS s
    RETURN m, s
  }
  WITH m, s WHERE s >= $min_score
  WITH m, s ORDER BY s DESC, m.memory_id LIMIT $n
  RETURN collect({m: m, s: s}) AS index_hits
}
CALL (){
  WITH 1 AS one WHERE $text IS NOT NULL
  CALL db.index.fulltext.queryNodes('memory_text_en', $text, {limit: $n_raw}) YIELD node AS m, score AS s
  WITH m, s
  WHERE ($videos IS NULL OR m.video_id IN $videos) AND ($before_clip IS NULL OR m.clip_index <= $before_clip)
    AND NOT m.is_equivalence AND ($entity_ids IS NULL OR any(e IN m.entity_ids WHERE e IN $entity_ids))
    AND ($clips IS NULL OR (m.video_id + '#' + toString(m.clip_index)) IN $clips)
  WITH m, s ORDER BY s DESC, m.memory_id LIMIT $n
  RETURN collect({m: m, s: s}) AS text_hits
}
CALL (){
  WITH 1 AS one WHERE $clip_text IS NOT NULL AND $entity_ids IS NULL
  CALL db.index.fulltext.queryNodes('clip_text_en', $clip_text, {limit: $n_raw}) YIELD node AS c, score AS s
  WITH c, s
  WHERE ($videos IS NULL OR c.video_id IN $videos) AND ($before_clip IS NULL OR c.clip_index <= $before_clip)
    AND ($clips IS NULL OR c.clip_key IN $clips)
  RETURN collect({v: c.video_id, c: c.clip_index, s: s}) AS clip_hits
}
WITH exact_hits + index_hits AS vec, text_hits AS txt, clip_hits
WITH vec, txt, clip_hits, CASE WHEN size(txt) > 0 THEN $vector_weight ELSE 1.0 END AS w,
     reduce(b = 0.0, h IN vec | CASE WHEN h.s > b THEN h.s ELSE b END) AS vbest,
     reduce(b = 0.0, h IN txt | CASE WHEN h.s > b THEN h.s ELSE b END) AS tbest
UNWIND [h IN vec | {m: h.m, cos: 2.0 * h.s - 1.0,
                    x: w * CASE WHEN vbest > $min_score THEN (h.s - $min_score) / (vbest - $min_score) ELSE 1.0 END}]
     + [h IN txt | {m: h.m, cos: null, x: (1.0 - w) * h.s / CASE WHEN tbest > 0 THEN tbest ELSE 1.0 END}] AS p
WITH clip_hits, p.m AS m, sum(p.x) AS s, max(p.cos) AS cos
WITH clip_hits, m, s, cos ORDER BY m.video_id, m.clip_index, m.order_in_clip, m.memory_id
WITH clip_hits, collect({m: m, v: m.video_id, c: m.clip_index, o: m.order_in_clip, s: s, cos: cos}) AS f
UNWIND range(0, size(f) - 1) AS i
WITH clip_hits, f[i] AS e, CASE WHEN i > 0 THEN f[i - 1] END AS prev, f[i + 1] AS next
WITH clip_hits, e, e.s + $context_weight * (
       CASE WHEN prev IS NOT NULL AND prev.v = e.v AND prev.c = e.c AND prev.o = e.o - 1 THEN prev.s ELSE 0.0 END
     + CASE WHEN next IS NOT NULL AND next.v = e.v AND next.c = e.c AND next.o = e.o + 1 THEN next.s ELSE 0.0 END
     ) AS fused
WITH clip_hits, collect({id: e.m.memory_id, v: e.v, c: e.c, cos: e.cos, fused: fused}) AS ranked,
     max(fused) AS mbest
WITH ranked, clip_hits, CASE WHEN mbest > 0 THEN mbest ELSE 1.0 END AS mbest,
     reduce(b = 0.0, h IN clip_hits | CASE WHEN h.s > b THEN h.s ELSE b END) AS sbest
UNWIND [r IN ranked | {v: r.v, c: r.c, r: r, x: 0.0}]
     + [h IN clip_hits | {v: h.v, c: h.c, r: null, x: $clip_text_weight * h.s / sbest}] AS p
WITH mbest, p.v AS v, p.c AS c, collect(p.r) AS mems, sum(p.x) AS text_part
WITH v, c, mems, text_part + (1.0 - $clip_text_weight)
       * reduce(b = 0.0, r IN mems | CASE WHEN r.fused > b THEN r.fused ELSE b END) / mbest AS clip_score
WITH collect({v: v, c: c, mems: mems, score: clip_score}) AS scored, max(clip_score) AS cbest
CALL (scored, cbest) {
  WITH scored WHERE $by_clip
  UNWIND scored AS x
  WITH x WHERE NOT (x.v + '#' + toString(x.c)) IN $exclude
  WITH x ORDER BY x.score DESC, x.v, x.c LIMIT $k
  RETURN x.v AS video_id, x.c AS clip_index, x.score AS score, reduce(b = null, r IN x.mems |
           CASE WHEN r.cos IS NOT NULL AND (b IS NULL OR r.cos > b) THEN r.cos ELSE b END) AS cosine, null AS hits
  UNION ALL
  WITH scored, cbest WHERE NOT $by_clip
  UNWIND scored AS x
  UNWIND x.mems AS r
  WITH r, r.fused + $clip_prior * x.score / CASE WHEN cbest > 0 THEN cbest ELSE 1.0 END AS node
  ORDER BY node DESC, r.id LIMIT $k
  WITH r.v AS video_id, r.c AS clip_index, collect({id: r.id, cos: r.cos}) AS hits, max(node) AS score,
       max(r.cos) AS cosine
  RETURN video_id, clip_index, score, cosine, hits
}
MATCH (cl:Clip {clip_key: video_id + '#' + toString(clip_index)})
CALL (video_id, clip_index, hits) {
  MATCH (m:Memory {video_id: video_id, clip_index: clip_index})
  WHERE NOT m.is_equivalence AND (NOT $episodic_only OR m.kind = 'episodic')
    AND (hits IS NULL OR m.memory_id IN [h IN hits | h.id])
  OPTIONAL MATCH (m)-[:MENTIONS]->(e)
  OPTIONAL MATCH (e)-[:IS]->(ch:Character)
  WITH m, collect(CASE WHEN e IS NULL THEN null
                       ELSE [CASE WHEN e:Face THEN 'face' WHEN e:Speaker THEN 'speaker' ELSE 'voice' END, e.entity_id, ch.char_id] END) AS chars
  ORDER BY m.order_in_clip, m.memory_id
  RETURN collect({memory_id: m.memory_id, kind: m.kind, text: m.text, order: m.order_in_clip, chars: chars,
                  source_ids: m.source_ids,
                  score: CASE WHEN hits IS NULL THEN null ELSE [h IN hits WHERE h.id = m.memory_id][0].cos END})
         AS memories
}
RETURN video_id, clip_index, cl.start_s AS start_s, cl.end_s AS end_s, cl.started_at AS started_at, score, cosine,
       memories
ORDER BY score DESC, video_id, clip_index
