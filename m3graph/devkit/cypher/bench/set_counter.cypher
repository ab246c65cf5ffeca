// mode: write
// params: name, value
// returns: value
// Moves an id counter (graph/allocate_ids) past ids the benchmark loader assigned itself; never moves it back.
MERGE (c:Counter {name: $name})
ON CREATE SET c.value = 0
SET c.value = CASE WHEN c.value < $value THEN $value ELSE c.value END
RETURN c.value AS value
