// mode: schema
// Re-embedding voices with a model of another dimension: the voice vector index is dropped, then re-created.
DROP INDEX voice_centroid IF EXISTS
