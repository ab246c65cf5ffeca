// mode: schema
// Migration 19: `Thing.name_key` for things written before it: the normalised name, which is the thing's key
// after its source and the '|' (`fact_versions.thing_key`), in batches of transactions so a large graph never
// holds one huge transaction. A thing that has its name key is not written again.
MATCH (t:Thing) WHERE t.name_key IS NULL AND t.video_id IS NOT NULL AND t.thing_key STARTS WITH t.video_id + '|'
CALL (t) {
  SET t.name_key = substring(t.thing_key, size(t.video_id) + 1)
} IN TRANSACTIONS OF 500 ROWS
