// mode: schema
// Re-embedding with a model of another dimension: the memory vector index is dropped, then re-created.
DROP INDEX memory_embedding IF EXISTS
