// mode: read
// params: ids
// returns: entity_id, key, uri, quality, candidate
// Every observation of these face entities with the file it was embedded from (`crop_uri`; null when none was kept).
UNWIND $ids AS id
MATCH (o:FaceObs)-[:OF]->(e:Face {entity_id: id})
RETURN e.entity_id AS entity_id, o.obs_key AS key, o.crop_uri AS uri, o.quality AS quality,
       coalesce(o.candidate, false) AS candidate
ORDER BY entity_id, key
