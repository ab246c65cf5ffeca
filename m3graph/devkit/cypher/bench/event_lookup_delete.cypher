// mode: write
// params: prefix, batch
// returns: deleted
// Removes what bench/event_lookup.py wrote (ids start with `prefix`), at most `batch` nodes of each label a call:
// the caller repeats it until nothing is deleted, so no transaction outgrows the server's memory limit.
CALL () {
  MATCH (m:Memory) WHERE m.video_id STARTS WITH $prefix
  WITH m LIMIT $batch
  DETACH DELETE m
  RETURN count(*) AS memories
}
CALL () {
  MATCH (t:Thing) WHERE t.video_id STARTS WITH $prefix
  WITH t LIMIT $batch
  DETACH DELETE t
  RETURN count(*) AS things
}
CALL () {
  MATCH (v:Source) WHERE v.source_id STARTS WITH $prefix
  WITH v LIMIT $batch
  DETACH DELETE v
  RETURN count(*) AS sources
}
RETURN memories + things + sources AS deleted
