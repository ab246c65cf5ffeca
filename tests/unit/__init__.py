"""Pure tests: no Neo4j server, no models; seconds in all."""
