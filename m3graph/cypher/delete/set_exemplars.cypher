// mode: write
// params: entities
// Exemplars and centroid recomputed after evidence was removed.
UNWIND $entities AS x
CALL (x) {
  MATCH (e:Face {entity_id: x.entity_id}) RETURN e
  UNION
  MATCH (e:Voice {entity_id: x.entity_id}) RETURN e
}
SET e.exemplars = x.exemplars, e.exemplar_quality = x.quality, e.exemplar_obs = x.obs, e.dim = x.dim,
    e.centroid = x.centroid, e.centroid_norm = x.norm, e.centroid_unit = x.unit, e.n_exemplars = size(x.quality)
