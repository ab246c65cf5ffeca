// mode: read
// params: memory_ids
// returns: memory_id, files
// The files a memory cites as evidence: the file a surrogate DESCRIBES, the files a turn's memory SHARED; each
// as the reference an agent can pass on ({sha256, name, kind, shared_at}; name and time as shared there when a
// share names it, else the file's first name).
UNWIND $memory_ids AS id
MATCH (m:Memory {memory_id: id})-[r:DESCRIBES|SHARED]->(f:File)
OPTIONAL MATCH (c:Clip)-[h:HAS_FILE]->(f) WHERE c.video_id = m.video_id AND (r.turn_id IS NULL OR h.turn_id = r.turn_id)
WITH m, f, head(collect(h)) AS h
ORDER BY f.sha256
RETURN m.memory_id AS memory_id,
       collect({sha256: f.sha256, name: coalesce(h.name, f.name), kind: coalesce(h.kind, f.kind),
                shared_at: coalesce(h.shared_at, f.shared_at)}) AS files
