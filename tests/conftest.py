"""Shared fixtures. Every test that touches the graph runs against a real Neo4j: never a mock.

Without `NEO4J_URI` the session starts one local server (home in a session temp dir, port `M3GRAPH_TEST_PORT`,
default 7690) and stops it at the end; with `NEO4J_URI` the tests use that server and start nothing. The server
starts only when a test asks for it (through `driver`, `memory_graph` or `graph`), so `pytest tests/unit` needs none.

The tiers are folders, and each test is marked with its folder's name (`-m unit`, `-m graph`, `-m e2e`):
tests/unit (pure: no server, no models), tests/graph (a real Neo4j; scripted models and the small packaged text
embedder only), tests/e2e (perception and language models, Celery/Redis, a browser, the CLI over real media).
A test in tests/unit that asks for the server fails: the tier is a promise, not a hint.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from neo4j import Driver, GraphDatabase

from m3graph.embedding import TextEmbedder, text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.localserver.server import LocalNeo4j, ServerStatus, ensure_server
from m3graph.settings import LocalServer, Settings
from tests.helpers.graph import ForeignDatabaseError, claim_database, wipe
from tests.helpers.object_store import S3Server, running_moto

TIERS = ("unit", "graph", "e2e")

REPO = Path(__file__).resolve().parents[1]
# Shared across sessions and with `m3graph db build`, so the launcher is compiled once per checkout.
LAUNCHER_BUILD_DIR = REPO / ".m3graph" / "launcher-build"



def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks every test with its tier (the folder under tests/ it lives in)."""
    root = Path(__file__).resolve().parent
    for item in items:
        parts = item.path.resolve().relative_to(root).parts
        if parts and parts[0] in TIERS:
            item.add_marker(parts[0])


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Keeps the unit tier pure: a unit test that needs the server belongs in tests/graph."""
    if item.get_closest_marker("unit") is not None and "neo4j_server" in getattr(item, "fixturenames", ()):
        pytest.fail(f"{item.nodeid} asks for the Neo4j server: a unit test must not (move it to tests/graph)")


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


@pytest.fixture(scope="session")
def memory_graph(settings: Settings, driver: Driver) -> Iterator[MemoryGraph]:
    """One connected, migrated store for the whole session (`driver` has claimed the database first)."""
    mg = MemoryGraph.connect(settings)
    yield mg
    mg.close()


@pytest.fixture(scope="session")
def embedder(memory_graph: MemoryGraph) -> TextEmbedder:
    """The configured text embedder, loaded once: tests that write or search memories embed with it."""
    return text_embedder(memory_graph.settings)


@pytest.fixture
def graph(memory_graph: MemoryGraph) -> MemoryGraph:
    """The session's store, emptied of everything but the migration records and the suite's marker."""
    wipe(memory_graph)
    return memory_graph


# ---------------------------------------------------------------------------------------------- APOC server
# A second session server on the 5.26 + APOC line, for tests that need APOC (Neo4j 2026.x has no APOC build). It
# runs with auth (like the main session server), on port M3GRAPH_TEST_PORT + 2 with its own home, and is stopped
# at the end of the session. With NEO4J_URI set the tests using it are skipped: no local server is managed then.


@pytest.fixture(scope="session")
def apoc_settings(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    if not settings.uses_local_server:
        pytest.skip("NEO4J_URI is set: no local 5.26 + APOC server is started")
    local = settings.local.model_copy(update={
        "home": tmp_path_factory.mktemp("neo4j-526"), "port": settings.local.port + 2, "neo4j_version": "5.26",
    })
    return settings.model_copy(update={"local": local})


@pytest.fixture(scope="session")
def apoc_server(apoc_settings: Settings) -> Iterator[ServerStatus]:
    server = LocalNeo4j(apoc_settings)
    server.build()
    status = server.start()
    yield status
    server.stop()


# ---------------------------------------------------------------------------------------------- object store


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3-compatible server (moto's server mode, a subprocess on a free localhost port) for the session."""
    with running_moto(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server
