// mode: read
// params: ids, per
// returns: entity_id, crops
// The best face crops (by quality) of each face entity: what a person looks at to judge an identity.
UNWIND $ids AS id
MATCH (f:Face {entity_id: id})
CALL (f) {
  MATCH (o:FaceObs)-[:OF]->(f)
  WHERE o.crop_uri IS NOT NULL
  WITH o ORDER BY o.quality DESC LIMIT $per
  RETURN collect({uri: o.crop_uri, source_id: o.video_id, clip_index: o.clip_index, t: o.frame_time_s}) AS crops
}
RETURN id AS entity_id, crops
