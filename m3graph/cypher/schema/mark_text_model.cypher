// mode: write
// params: model
// Claims an unmarked graph for a text model (a marked one keeps its mark: only `reembed` moves it).
MERGE (k:EmbeddingModel {kind: 'text'})
ON CREATE SET k.model = $model, k.name = 'text model ' + $model
