// mode: write
// params: model
// The graph's memory vectors now all belong to $model (written once every memory is re-embedded).
MERGE (k:EmbeddingModel {kind: 'text'})
SET k.model = $model, k.name = 'text model ' + $model
