// mode: write
// params: ids
// returns: clips
// Entities about to be deleted: no clip may keep a pair naming them in `vote_pairs` (face:voice, SAME_AS edges it
// voted on) or `cooccur_pairs` (face:face, CO_OCCURS edges it saw). Those lists only spare a clip's own deletion a
// scan of all edges, but a pair naming a deleted person is residue of them. The clips are found through the
// entities' edges (SAME_AS evidence is '<clip>|<source>', CO_OCCURS lists its clips) and evidence, so this runs
// before the entities and their edges go. A list that was never set stays unset.
UNWIND $ids AS id
CALL (id) {
  MATCH (e:Face {entity_id: id}) RETURN e
  UNION
  MATCH (e:Voice {entity_id: id}) RETURN e
}
CALL (e) {
  MATCH (e)-[r:SAME_AS]-()
  UNWIND coalesce(r.evidence, []) AS x
  RETURN split(x, '|')[0] AS clip_key
  UNION
  MATCH (e)-[r:CO_OCCURS]-()
  UNWIND coalesce(r.clips, []) AS clip_key
  RETURN clip_key
  UNION
  MATCH (e)<-[:OF]-()-[:IN_CLIP]->(c:Clip)
  RETURN c.clip_key AS clip_key
}
WITH collect(DISTINCT clip_key) AS keys, [i IN $ids | toString(i)] AS gone
UNWIND keys AS k
MATCH (c:Clip {clip_key: k})
WHERE any(p IN coalesce(c.vote_pairs, []) + coalesce(c.cooccur_pairs, []) WHERE any(x IN split(p, ':') WHERE x IN gone))
SET c.vote_pairs = CASE WHEN c.vote_pairs IS NULL THEN null
                        ELSE [p IN c.vote_pairs WHERE none(x IN split(p, ':') WHERE x IN gone)] END,
    c.cooccur_pairs = CASE WHEN c.cooccur_pairs IS NULL THEN null
                           ELSE [p IN c.cooccur_pairs WHERE none(x IN split(p, ':') WHERE x IN gone)] END
RETURN count(c) AS clips
