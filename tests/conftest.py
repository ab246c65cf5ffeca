"""Shared fixtures. Every test that touches the graph runs against a real Neo4j: never a mock.

Without `NEO4J_URI` the session starts one local server (home in a session temp dir, port `M3GRAPH_TEST_PORT`,
default 7690) and stops it at the end; with `NEO4J_URI` the tests use that server and start nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from graph_fixtures import ForeignDatabaseError, claim_database
from neo4j import Driver, GraphDatabase

from m3graph.localserver.server import LocalNeo4j, ServerStatus, ensure_server
from m3graph.settings import LocalServer, Settings

REPO = Path(__file__).resolve().parents[1]
# Shared across sessions and with `m3graph db build`, so the launcher is compiled once per checkout.
LAUNCHER_BUILD_DIR = REPO / ".m3graph" / "launcher-build"


# ---------------------------------------------------------------------------------------------- server fixtures


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings of the session; with NEO4J_URI in the environment they point at that server instead."""
    local = LocalServer(
        home=tmp_path_factory.mktemp("neo4j"),
        port=int(os.environ.get("M3GRAPH_TEST_PORT", "7690")),
        heap_mb=2048,
        pagecache_mb=1024,
        build_dir=LAUNCHER_BUILD_DIR,
        # M3GRAPH_TEST_NEO4J_VERSION=5.26 runs the suite on the 5.26 + APOC compatibility line.
        **({"neo4j_version": v} if (v := os.environ.get("M3GRAPH_TEST_NEO4J_VERSION")) else {}),
    )
    # The store tests exercise the reference thresholds (cosine 0.3 face / 0.6 voice); perception tests use the
    # thresholds measured for the offline embedders through a settings variant.
    return Settings(local=local, identity={"face_threshold": 0.3, "voice_threshold": 0.6})


@pytest.fixture(scope="session")
def neo4j_server(settings: Settings) -> Iterator[ServerStatus | None]:
    """The session's server (None when NEO4J_URI is used); stopped at the end only if this session started it."""
    status = ensure_server(settings)
    yield status
    if status is not None and not status.reused:
        LocalNeo4j(settings).stop()


@pytest.fixture(scope="session")
def driver(settings: Settings, neo4j_server: ServerStatus | None) -> Iterator[Driver]:
    uri = neo4j_server.bolt_uri if neo4j_server is not None else settings.bolt_uri
    auth = (settings.neo4j_user, settings.neo4j_password.get_secret_value())
    with GraphDatabase.driver(uri, auth=auth) as drv:
        drv.verify_connectivity()
        try:  # before anything writes: never test against (and wipe) a graph the suite did not create
            claim_database(drv, settings.neo4j_database)
        except ForeignDatabaseError as exc:
            pytest.exit(str(exc), returncode=4)
        yield drv


# ---------------------------------------------------------------------------------------------- more fixtures
# Fixtures for the rest of the package (graph store, schema, sample videos, ...) go below this line.
