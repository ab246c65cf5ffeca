// mode: write
// params: clip_key, video_id, clip_index, observations
MATCH (c:Clip {clip_key: $clip_key})
UNWIND $observations AS o
MATCH (f:Face {entity_id: o.entity_id})
MERGE (x:FaceObs {obs_key: o.obs_key})
SET x.video_id = $video_id, x.clip_index = $clip_index, x.cluster_label = o.label,
    x.frame_time_s = o.frame_time_s, x.bbox = o.bbox, x.det_score = o.det_score, x.quality = o.quality,
    x.crop_uri = o.crop_uri, x.embedding = o.embedding, x.candidate = o.candidate,
    x.name = 'face_' + toString(o.entity_id) + ' @' + toString(round(o.frame_time_s, 1)) + 's'
MERGE (x)-[:OF]->(f)
MERGE (x)-[:IN_CLIP]->(c)
