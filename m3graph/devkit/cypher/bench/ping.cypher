// mode: read
// returns: one
// The cheapest round trip: separates driver + Bolt + scheduling overhead from query work.
RETURN 1 AS one
