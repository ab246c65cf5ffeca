// mode: read
// params:
// returns: n
// Every memory of the store: a count-store lookup, whatever the store's size.
MATCH (m:Memory)
RETURN count(m) AS n
