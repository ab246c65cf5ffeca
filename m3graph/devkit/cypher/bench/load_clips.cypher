// mode: write
// params: clips
// returns: n
// Benchmark loader (bench/loader.py): videos and clips with the properties graph/upsert_clip.cypher writes.
// One row per clip, in clip order; NEXT links are made by bench/load_next once the whole batch exists.
UNWIND $clips AS c
MERGE (v:Video {video_id: c.source_id})
ON CREATE SET v:Source, v.source_id = c.source_id, v.kind = 'video', v.created_at = datetime(), v.name = c.source_id,
              v.clip_count = c.clip_count, v.duration_s = c.duration_s
CREATE (cl:Clip {clip_key: c.source_id + '#' + toString(c.clip_index)})
SET cl.created_at = datetime(), cl.video_id = c.source_id, cl.clip_index = c.clip_index, cl.start_s = c.start_s,
    cl.end_s = c.end_s,
    cl.name = c.source_id + ' #' + toString(c.clip_index) + ' [' + toString(toInteger(c.start_s)) + '-'
              + toString(toInteger(c.end_s)) + 's]'
CREATE (cl)-[:OF]->(v)
RETURN count(cl) AS n
