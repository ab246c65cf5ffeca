"""A second session server on the 5.26 + APOC line, for tests that need APOC (Neo4j 2026.x has no APOC build).

Import into a test module with ``from auth_server import apoc_server, apoc_settings  # noqa: F401``. The server
runs with auth (like the main session server), on port M3GRAPH_TEST_PORT + 2 with its own home, and is stopped at
the end of the session. With NEO4J_URI set the tests using it are skipped: no local server is managed then.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from m3graph.localserver.server import LocalNeo4j, ServerStatus
from m3graph.settings import Settings


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
