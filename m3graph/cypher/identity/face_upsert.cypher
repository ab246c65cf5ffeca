// mode: write
// params: video_id, clip_index, entities
UNWIND $entities AS e
MERGE (n:Face {entity_id: e.entity_id})
ON CREATE SET n.created_at = datetime(), n.first_video_id = $video_id, n.first_clip_index = $clip_index,
              n.name = 'face_' + toString(e.entity_id)
SET n.exemplars = e.exemplars, n.exemplar_quality = e.quality, n.exemplar_obs = e.obs, n.dim = e.dim,
    n.centroid = e.centroid, n.centroid_norm = e.norm, n.centroid_unit = e.unit, n.n_exemplars = size(e.quality),
    n.last_video_id = $video_id, n.last_clip_index = $clip_index
