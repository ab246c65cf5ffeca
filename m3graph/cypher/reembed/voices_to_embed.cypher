// mode: read
// params: model, after, k
// returns: entity_id
// The next batch of voice entities not yet re-embedded by $model, in entity_id order after the cursor (resumable).
MATCH (e:Voice)
WHERE e.entity_id > $after AND coalesce(e.embedding_model, '') <> $model
RETURN e.entity_id AS entity_id
ORDER BY entity_id
LIMIT $k
