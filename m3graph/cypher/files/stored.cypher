// mode: read
// params: sha256
// returns: stored, mime, name
// The stored copy of a file the graph holds (by its key): the only way the explorer finds a file's bytes.
MATCH (f:File {sha256: $sha256})
WHERE EXISTS { (f)<-[:HAS_FILE]-(:Clip) }
RETURN f.stored AS stored, f.mime AS mime, f.name AS name
