// mode: write
// params: clips
// returns: n
// Benchmark loader: links each clip of the batch to its predecessor (which this or an earlier batch created).
UNWIND $clips AS c
MATCH (n:Clip {clip_key: c.source_id + '#' + toString(c.clip_index)})
MATCH (p:Clip {clip_key: c.source_id + '#' + toString(c.clip_index - 1)})
CREATE (p)-[:NEXT]->(n)
RETURN count(n) AS n
