// mode: read
// params: token
// returns: transactionId, message
// The guarded Cypher tool ends its own transaction after it closed the connection at its deadline: the server
// notices a client that went away only on its own schedule (seconds on a loaded machine), so the guard asks it to
// stop now (m3graph/graphdb/guard_ending.py). Only the transaction tagged with this run's token is touched.
SHOW TRANSACTIONS YIELD transactionId AS id, metaData
WHERE metaData.m3graph_guard = $token
TERMINATE TRANSACTIONS id
YIELD transactionId, message
RETURN transactionId, message
