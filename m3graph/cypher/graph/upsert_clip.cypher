// mode: write
// params: clips
// Videos and Clips keyed by (video, clip), a batch per statement (`ClipInfo.upsert_params` builds each row);
// NEXT links to the neighbours that already exist, so clips may arrive out of order, in any batch, and re-running
// changes nothing. The source is a `Source` of a `kind` keyed by `source_id` (`Video`/`video_id` kept for old
// queries, docs/graph-model.md "Sources"): a new one is a video until chat/write_session or notes/claim_source,
// in the same transaction, say it is a conversation, a facts list or a notes source.
UNWIND $clips AS k
MERGE (v:Video {video_id: k.source_id})
ON CREATE SET v.created_at = datetime(), v.name = k.video_name
SET v:Source, v.source_id = k.source_id, v.kind = coalesce(v.kind, 'video')
MERGE (c:Clip {clip_key: k.source_id + '#' + toString(k.clip_index)})
ON CREATE SET c.created_at = datetime()
SET c.video_id = k.source_id, c.clip_index = k.clip_index, c.start_s = k.start_s, c.end_s = k.end_s, c.uri = k.uri,
    c.started_at = k.started_at,
    c.name = k.video_name + ' #' + toString(k.clip_index) + ' [' + toString(toInteger(k.start_s)) + '-' + toString(toInteger(k.end_s)) + 's]'
MERGE (c)-[:OF]->(v)
WITH k, v, c
SET v.clip_count = COUNT { (:Clip)-[:OF]->(v) },
    v.duration_s = CASE WHEN coalesce(v.duration_s, 0.0) < k.end_s THEN k.end_s ELSE v.duration_s END
WITH k, c
OPTIONAL MATCH (p:Clip {clip_key: k.source_id + '#' + toString(k.clip_index - 1)})
OPTIONAL MATCH (n:Clip {clip_key: k.source_id + '#' + toString(k.clip_index + 1)})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | MERGE (p)-[:NEXT]->(c))
FOREACH (_ IN CASE WHEN n IS NULL THEN [] ELSE [1] END | MERGE (c)-[:NEXT]->(n))
