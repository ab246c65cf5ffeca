// mode: write
// params: rows
// Migration 15: Clip.uri as a storage-relative key (m3graph.storage.keys), one UNWIND per page; setting
// the same key twice is the same graph.
UNWIND $rows AS r
MATCH (c:Clip {clip_key: r.key})
SET c.uri = r.media_key
