// mode: write
// params: shas
// returns: stored
// Files no session holds any more are deleted with their relationships; the stored copies' paths come back so
// the caller removes them after the transaction commits (files that another session still holds are kept).
UNWIND $shas AS sha
MATCH (f:File {sha256: sha})
WHERE NOT EXISTS { (f)<-[:HAS_FILE]-(:Clip) }
WITH f, f.stored AS stored
DETACH DELETE f
RETURN stored
