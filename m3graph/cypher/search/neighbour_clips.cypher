// mode: read
// params: source_id, clip_index, before, after, before_clip
// returns: clip_index
// Temporal navigation over NEXT, never past before_clip.
MATCH (c:Clip {clip_key: $source_id + '#' + toString($clip_index)})
CALL (c) {
  MATCH (p:Clip)-[:NEXT*1..20]->(c) WHERE c.clip_index - p.clip_index <= $before RETURN p AS n
  UNION
  MATCH (c)-[:NEXT*1..20]->(x:Clip) WHERE x.clip_index - c.clip_index <= $after RETURN x AS n
  UNION
  RETURN c AS n
}
WITH n WHERE $before_clip IS NULL OR n.clip_index <= $before_clip
RETURN n.clip_index AS clip_index ORDER BY clip_index
