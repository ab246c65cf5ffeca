// mode: write
// params: rows
// Migration 15: FaceObs.crop_uri as a storage-relative key (m3graph.storage.keys), one UNWIND per page; setting
// the same key twice is the same graph.
UNWIND $rows AS r
MATCH (o:FaceObs {obs_key: r.key})
SET o.crop_uri = r.media_key
