"""The local Neo4j that m3graph runs when no `NEO4J_URI` is given: tooling, not the memory store.

It builds the Java launcher (``launcher/``) with Maven, starts, stops, backs up and upgrades the server, and serves
Neo4j Browser. It talks to Neo4j only to check that Bolt answers, so it imports nothing of `m3graph.graphdb`
(errors, settings and checksums only; tests/unit/test_layers.py enforces it), and the store never imports it.
"""
