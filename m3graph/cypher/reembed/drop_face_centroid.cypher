// mode: schema
// Re-embedding faces with a model of another dimension: the face vector index is dropped, then re-created.
DROP INDEX face_centroid IF EXISTS
