// mode: read
// params: memory_ids
// returns: memory_id, text
// Among the memories that mention a person being deleted, the surrogates of shared photos (file_sha256, and the
// photo is still held by a session): they describe the photo, so they lose the person's face tag, not the photo.
UNWIND $memory_ids AS id
MATCH (m:Memory {memory_id: id})-[:DESCRIBES]->(f:File {kind: 'image'})
WHERE m.file_sha256 IS NOT NULL AND EXISTS { (f)<-[:HAS_FILE]-(:Clip) }
RETURN m.memory_id AS memory_id, m.text AS text
