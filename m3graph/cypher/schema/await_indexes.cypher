// mode: schema
// params: timeout_s
CALL db.awaitIndexes($timeout_s)
