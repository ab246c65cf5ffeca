// mode: write
// params: source_id, entities
// Imported Voice entities with their exemplars as Utterance evidence in the entity's first clip. An ASR
// string is kept on an utterance only when the research node's contents line up with its embeddings.
UNWIND $entities AS e
MATCH (c:Clip {clip_key: e.clip_key})
MERGE (n:Voice {entity_id: e.entity_id})
ON CREATE SET n.created_at = datetime(), n.first_video_id = $source_id, n.first_clip_index = e.clip_index,
              n.name = 'voice_' + toString(e.entity_id)
SET n.exemplars = e.exemplars, n.exemplar_quality = e.quality, n.exemplar_obs = e.obs, n.dim = e.dim,
    n.centroid = e.centroid, n.centroid_norm = e.norm, n.centroid_unit = e.unit, n.n_exemplars = size(e.quality),
    n.last_video_id = $source_id, n.last_clip_index = e.clip_index,
    n.imported = true, n.import_node_id = e.old_id, n.import_reason = e.reason
WITH n, c, e
UNWIND e.observations AS o
MERGE (x:Utterance {utt_key: o.obs_key})
SET x.candidate = true
SET x.video_id = $source_id, x.clip_index = e.clip_index, x.cluster_label = e.old_id,
    x.start_s = null, x.end_s = null, x.text = o.text, x.quality = o.quality,
    x.audio_uri = null, x.embedding = o.embedding, x.imported = true,
    x.name = 'voice_' + toString(e.entity_id) + ': ' + left(coalesce(o.text, ''), 60)
MERGE (x)-[:OF]->(n)
MERGE (x)-[:IN_CLIP]->(c)
