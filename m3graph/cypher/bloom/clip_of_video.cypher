// mode: read
// params: n, v
// returns: c, r, mem
// Bloom search phrase "clip $n of video $v": one clip and the memories it holds.
MATCH (c:Clip {clip_key: $v + '#' + toString(toInteger($n))})
OPTIONAL MATCH (mem:Memory)-[r:IN_CLIP]->(c)
RETURN c, r, mem
