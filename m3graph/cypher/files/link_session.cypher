// mode: write
// params: clip_key, files
// A session's shared files: one File node per content (keyed by SHA-256, so the same bytes shared again link the
// node that exists), and one HAS_FILE per share with the name and time it was shared under. The node keeps what
// the first share said (name, kind, shared_at); type, size and the stored copy's path come from the bytes.
MATCH (c:Clip {clip_key: $clip_key})
UNWIND $files AS f
MERGE (x:File {sha256: f.sha256})
ON CREATE SET x.kind = f.kind, x.mime = f.mime, x.size = f.size, x.name = f.name, x.stored = f.stored,
              x.shared_at = f.shared_at, x.created_at = datetime()
MERGE (c)-[h:HAS_FILE {turn_id: f.turn_id}]->(x)
SET h.name = f.name, h.kind = f.kind, h.shared_at = f.shared_at
