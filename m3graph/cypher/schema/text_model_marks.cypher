// mode: read
// returns: model
// The text model the graph's memory vectors belong to (one mark; two only after a race, which is refused).
MATCH (k:EmbeddingModel {kind: 'text'}) RETURN k.model AS model
