"""The test suite: tests/unit (no server), tests/graph (a real Neo4j), tests/e2e (models, workers, browser)."""
