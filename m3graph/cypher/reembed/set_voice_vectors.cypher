// mode: write
// params: model, observations, entities
// One batch of re-embedded voices in one transaction: observation vectors (null where the file is gone and
// --drop-missing allowed it: such an observation is no longer an exemplar candidate), then each entity's
// exemplars and centroid rebuilt from them (all null when none is left: the entity can no longer be matched),
// everything marked with the model.
CALL () {
  UNWIND $observations AS r
  MATCH (o:Utterance {utt_key: r.key})
  SET o.embedding = r.embedding, o.embedding_model = $model,
      o.candidate = CASE WHEN r.embedding IS NULL THEN false ELSE o.candidate END
}
UNWIND $entities AS x
MATCH (e:Voice {entity_id: x.entity_id})
SET e.exemplars = x.exemplars, e.exemplar_quality = x.quality, e.exemplar_obs = x.obs, e.dim = x.dim,
    e.centroid = x.centroid, e.centroid_norm = x.norm, e.centroid_unit = x.unit, e.n_exemplars = size(x.quality),
    e.embedding_model = $model
