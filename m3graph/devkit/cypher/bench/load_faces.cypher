// mode: write
// params: entities, source_id
// returns: n
// Benchmark loader: Face entities with exactly the properties identity/face_write (identity/write.cypher.tmpl) writes (exemplars
// flattened row-major, `dim` per row), each with its own Character as characters/write.cypher would make it.
UNWIND $entities AS e
CREATE (n:Face {entity_id: e.entity_id})
SET n.created_at = datetime(), n.first_video_id = $source_id, n.first_clip_index = e.clip_index,
    n.name = 'face_' + toString(e.entity_id), n.exemplars = e.exemplars, n.exemplar_quality = e.quality,
    n.exemplar_obs = e.obs, n.dim = e.dim, n.centroid = e.centroid, n.centroid_norm = e.norm,
    n.centroid_unit = e.unit, n.n_exemplars = size(e.quality), n.last_video_id = $source_id,
    n.last_clip_index = e.clip_index
CREATE (c:Character {char_id: e.entity_id})
SET c.created_at = datetime(), c.updated_at = datetime(), c.name = 'character_' + toString(e.entity_id),
    c.aliases = [], c.size = 1
CREATE (n)-[:IS]->(c)
RETURN count(n) AS n
