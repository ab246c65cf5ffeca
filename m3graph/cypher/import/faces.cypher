// mode: write
// params: source_id, entities
// Imported Face entities with their exemplars as FaceObs evidence in the entity's first clip (so that
// delete_clip / delete_video remove them like any other evidence). `unit` is null when the embedding
// dimension differs from the configured face model: such entities stay out of the vector index.
UNWIND $entities AS e
MATCH (c:Clip {clip_key: e.clip_key})
MERGE (n:Face {entity_id: e.entity_id})
ON CREATE SET n.created_at = datetime(), n.first_video_id = $source_id, n.first_clip_index = e.clip_index,
              n.name = 'face_' + toString(e.entity_id)
SET n.exemplars = e.exemplars, n.exemplar_quality = e.quality, n.exemplar_obs = e.obs, n.dim = e.dim,
    n.centroid = e.centroid, n.centroid_norm = e.norm, n.centroid_unit = e.unit, n.n_exemplars = size(e.quality),
    n.last_video_id = $source_id, n.last_clip_index = e.clip_index,
    n.imported = true, n.import_node_id = e.old_id, n.import_reason = e.reason
WITH n, c, e
UNWIND e.observations AS o
MERGE (x:FaceObs {obs_key: o.obs_key})
SET x.candidate = true
SET x.video_id = $source_id, x.clip_index = e.clip_index, x.cluster_label = e.old_id,
    x.frame_time_s = null, x.bbox = null, x.det_score = null, x.quality = o.quality,
    x.crop_uri = o.crop_uri, x.embedding = o.embedding, x.imported = true,
    x.name = 'face_' + toString(e.entity_id) + ' (imported #' + toString(o.index) + ')'
MERGE (x)-[:OF]->(n)
MERGE (x)-[:IN_CLIP]->(c)
