"""Tests against a real Neo4j over Bolt (the session server of tests/conftest.py); scripted models only, plus
the small packaged text embedder."""
