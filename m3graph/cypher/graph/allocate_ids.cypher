// mode: write
// params: counter, n
// returns: first
MERGE (c:Counter {name: $counter})
ON CREATE SET c.value = 0
SET c.value = c.value + $n
RETURN c.value - $n + 1 AS first
