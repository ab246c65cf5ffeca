// mode: read
// returns: name, type, state, progress
// Population progress of every index, polled while the benchmark waits for indexes to come online.
SHOW INDEXES YIELD name, type, state, populationPercent
RETURN name, type, state, populationPercent AS progress
ORDER BY name
