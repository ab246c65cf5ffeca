// mode: write
// params: video_id, clip_index, clip_key, n_new, dim, cap, entities, observations, pairs
// returns: first
// Every write of a face resolution in one round trip (issue 12), after identity/face_match in the same
// transaction and under its lock. An entity reference `ref` is an existing entity id (>= 0) or -1, -2, ... for
// the clip's new entities in creation order; their ids are allocated here (graph/allocate_ids.cypher) as
// first, first + 1, ... and `first` is returned (null when nothing was created).
CALL () {
  WITH $n_new AS n WHERE n > 0
  MERGE (c:Counter {name: 'entity'})
  ON CREATE SET c.value = 0
  SET c.value = c.value + n
  RETURN max(c.value - n + 1) AS first
}
// Exemplars: the `cap` best by quality (ties: the lexicographically first observation key) of the stored set and
// the cluster's new ones (e.new: q, o = observation key, v = unit vector); the centroid is their mean, summed in
// order, and the unit centroid is what the vector index holds (m3graph.graphdb.identity.EntityState, server-side).
CALL (first) {
  UNWIND $entities AS e
  WITH e, CASE WHEN e.ref >= 0 THEN e.ref ELSE first - e.ref - 1 END AS id
  MERGE (n:Face {entity_id: id})
  ON CREATE SET n.created_at = datetime(), n.first_video_id = $video_id, n.first_clip_index = $clip_index,
                n.name = 'face_' + toString(id)
  WITH n, e, coalesce(n.exemplar_quality, []) AS oq, coalesce(n.exemplar_obs, []) AS oo,
       coalesce(n.exemplars, []) AS ox
  WITH n, oo, [i IN range(0, size(oq) - 1) | {q: oq[i], o: oo[i], v: ox[i * $dim .. (i + 1) * $dim]}] + e.new AS pool
  CALL (pool) {
    UNWIND pool AS x
    WITH x ORDER BY x.q DESC, x.o ASC
    LIMIT $cap
    RETURN collect(x) AS kept
  }
  SET n.last_video_id = $video_id, n.last_clip_index = $clip_index
  // An unchanged exemplar set keeps its stored vectors (re-deriving gives the same centroid): no vector index update.
  WITH n, kept WHERE [x IN kept | x.o] <> oo
  WITH n, kept, size(kept) AS m
  WITH n, kept, m, [j IN range(0, $dim - 1) | reduce(s = 0.0, x IN kept | s + x.v[j]) / m] AS centroid
  WITH n, kept, m, centroid, sqrt(reduce(s = 0.0, x IN centroid | s + x * x)) AS norm
  SET n.exemplars = reduce(acc = [], x IN kept | acc + x.v), n.exemplar_quality = [x IN kept | x.q],
      n.exemplar_obs = [x IN kept | x.o], n.dim = $dim, n.centroid = centroid, n.centroid_norm = norm,
      n.centroid_unit = CASE WHEN norm > 0 THEN [x IN centroid | x / norm] ELSE centroid END, n.n_exemplars = m
}
// Observations: evidence nodes of the clip, each linked to its entity (the candidates are the exemplars offered).
CALL (first) {
  MATCH (c:Clip {clip_key: $clip_key})
  UNWIND $observations AS o
  WITH c, o, CASE WHEN o.ref >= 0 THEN o.ref ELSE first - o.ref - 1 END AS id
  MATCH (f:Face {entity_id: id})
  MERGE (x:FaceObs {obs_key: o.obs_key})
  SET x.video_id = $video_id, x.clip_index = $clip_index, x.cluster_label = o.label,
      x.frame_time_s = o.frame_time_s, x.bbox = o.bbox, x.det_score = o.det_score, x.quality = o.quality,
      x.crop_uri = o.crop_uri, x.embedding = o.embedding, x.candidate = o.candidate,
      x.name = 'face_' + toString(id) + ' @' + toString(round(o.frame_time_s, 1)) + 's'
  MERGE (x)-[:OF]->(f)
  MERGE (x)-[:IN_CLIP]->(c)
}
// Faces seen in the same frame are different people: a cannot-link constraint for character formation, stored
// as (lower id)-[:CO_OCCURS]->(higher id). The clip lists its pairs (`cooccur_pairs`, in id order) so deleting it
// never scans all CO_OCCURS edges.
CALL (first) {
  MATCH (c:Clip {clip_key: $clip_key})
  UNWIND $pairs AS p
  WITH c, [r IN [p.a, p.b] | CASE WHEN r >= 0 THEN r ELSE first - r - 1 END] AS ids
  WITH DISTINCT c, CASE WHEN ids[0] < ids[1] THEN ids[0] ELSE ids[1] END AS a,
       CASE WHEN ids[0] < ids[1] THEN ids[1] ELSE ids[0] END AS b
  ORDER BY a, b
  MATCH (fa:Face {entity_id: a}), (fb:Face {entity_id: b})
  MERGE (fa)-[r:CO_OCCURS]->(fb)
  SET r.clips = CASE WHEN $clip_key IN coalesce(r.clips, []) THEN r.clips ELSE coalesce(r.clips, []) + $clip_key END
  WITH c, toString(a) + ':' + toString(b) AS key
  SET c.cooccur_pairs = CASE WHEN key IN coalesce(c.cooccur_pairs, []) THEN c.cooccur_pairs
                             ELSE coalesce(c.cooccur_pairs, []) + key END
}
// A new entity has no SAME_AS edge, co-member or identity vote yet, so m3graph.graphdb.characters.
// refresh_characters would make each its own character, with new ids in entity-id order, under the
// `characters` lock: the same writes as characters/write.cypher for such groups.
CALL (first) {
  WITH first WHERE first IS NOT NULL
  MERGE (l:Lock {name: 'characters'})
  SET l.touched_at = timestamp()
  MERGE (k:Counter {name: 'character'})
  ON CREATE SET k.value = 0
  SET k.value = k.value + $n_new
  WITH first, k.value - $n_new + 1 AS cfirst
  UNWIND range(0, $n_new - 1) AS i
  MATCH (e:Face {entity_id: first + i})
  MERGE (ch:Character {char_id: cfirst + i})
  ON CREATE SET ch.created_at = datetime(), ch.name = 'character_' + toString(cfirst + i), ch.aliases = []
  SET ch.size = 1, ch.updated_at = datetime()
  MERGE (e)-[:IS]->(ch)
}
RETURN first
