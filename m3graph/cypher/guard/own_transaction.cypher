// mode: read
// params: token
// returns: n
// How many transactions tagged with this guarded run's token the server still lists; the guard waits for none
// before it reports a timeout, so "stopped" means the server's work stopped (m3graph/graphdb/guard_ending.py).
SHOW TRANSACTIONS YIELD metaData
WHERE metaData.m3graph_guard = $token
RETURN count(*) AS n
