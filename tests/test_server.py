"""The local Neo4j server, exercised for real: a JVM, a Bolt socket, APOC."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from neo4j import Driver, GraphDatabase

from m3graph.cli.db import db
from m3graph.errors import ServerError
from m3graph.graphdb.server import LocalNeo4j, ServerStatus, ensure_server
from m3graph.settings import Settings


def _variant(settings: Settings, **local: Any) -> Settings:
    return settings.model_copy(update={"local": settings.local.model_copy(update=local)})


@pytest.fixture
def local_server(neo4j_server: ServerStatus | None) -> ServerStatus:
    if neo4j_server is None:
        pytest.skip("NEO4J_URI is set: the tests use an external server, no local one was started")
    return neo4j_server


@pytest.fixture
def listener() -> Iterator[int]:
    """A plain TCP listener on a free port: 'something else' holding the port the server wants."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_start_reports_running_server(local_server: ServerStatus, settings: Settings) -> None:
    assert local_server.running and local_server.ready
    assert not local_server.reused
    assert local_server.startup_s is not None and local_server.startup_s > 0
    status = LocalNeo4j(settings).status()
    assert status.running and status.ready
    assert status.pid == local_server.pid
    assert status.rss_mb is not None and status.rss_mb > 50
    assert status.bolt_uri == settings.bolt_uri
    assert (status.home / "m3graph.pid").read_text().strip() == str(status.pid)


def test_second_start_reuses_running_server(local_server: ServerStatus, settings: Settings) -> None:
    again = LocalNeo4j(settings).start()
    assert again.reused
    assert again.pid == local_server.pid
    assert again.startup_s is None


def test_bolt_query(driver: Driver) -> None:
    records, _, _ = driver.execute_query("RETURN 1 AS one")
    assert records[0]["one"] == 1


@pytest.mark.usefixtures("local_server")  # an external server may be another version or edition
def test_components_report_neo4j_526_community(driver: Driver) -> None:
    records, _, _ = driver.execute_query("CALL dbms.components() YIELD name, versions, edition RETURN *")
    kernel = next(r for r in records if r["name"] == "Neo4j Kernel")
    assert kernel["versions"][0].startswith("5.26.")
    assert kernel["edition"] == "community"


def test_apoc_available(driver: Driver) -> None:
    records, _, _ = driver.execute_query("RETURN apoc.version() AS v")
    assert records[0]["v"].startswith("5.26.")


def test_cli_status_and_start_reuse(local_server: ServerStatus, settings: Settings) -> None:
    runner = CliRunner()
    status = runner.invoke(db, ["status"], obj=settings)
    assert status.exit_code == 0, status.output
    assert f"pid:     {local_server.pid}" in status.output
    start = runner.invoke(db, ["start", "--no-build"], obj=settings)
    assert start.exit_code == 0, start.output
    assert "reused:  yes" in start.output and settings.bolt_uri in start.output


def test_stop_then_fresh_start(settings: Settings, tmp_path: Path) -> None:
    """On its own home and port, so the session server is untouched; data must survive the clean shutdown."""
    if not settings.uses_local_server:
        pytest.skip("NEO4J_URI is set: no local server management")
    other = _variant(settings, home=tmp_path / "neo4j", port=settings.local.port + 1)
    server = LocalNeo4j(other)
    server.build()
    auth = (other.neo4j_user, other.neo4j_password.get_secret_value())
    try:
        first = server.start()
        assert first.running and not first.reused
        with pytest.raises(ServerError, match=rf"running on 127\.0\.0\.1:{other.local.port}, not on"):
            LocalNeo4j(_variant(other, port=other.local.port + 1)).start()
        with GraphDatabase.driver(server.bolt_uri, auth=auth) as drv:
            drv.execute_query("CREATE (:Probe {name: 'survives restart'})")

        assert server.stop() is True
        stopped = server.status()
        assert not stopped.running and stopped.pid is None
        assert not server.pid_file.exists() and not server.ready_file.exists()
        assert server.stop() is False

        second = server.start()
        assert second.running and not second.reused
        assert second.pid != first.pid
        with GraphDatabase.driver(server.bolt_uri, auth=auth) as drv:
            records, _, _ = drv.execute_query("MATCH (p:Probe) RETURN p.name AS name")
        assert [r["name"] for r in records] == ["survives restart"]
    finally:
        server.stop()
    assert not server.status().running


def test_missing_java_is_a_clear_error(settings: Settings, tmp_path: Path) -> None:
    bad = _variant(settings, java="/nonexistent/java", home=tmp_path / "neo4j")
    with pytest.raises(ServerError, match=r"java not found: '/nonexistent/java'"):
        LocalNeo4j(bad).start()
    with pytest.raises(ServerError, match="java not found"):
        LocalNeo4j(_variant(bad, build_dir=tmp_path / "build")).build(force=True)
    assert not (tmp_path / "neo4j" / "m3graph.pid").exists()


def test_missing_maven_is_a_clear_error(settings: Settings, tmp_path: Path) -> None:
    bad = _variant(settings, mvn="/nonexistent/mvn", home=tmp_path / "neo4j", build_dir=tmp_path / "build")
    with pytest.raises(ServerError, match=r"mvn not found: '/nonexistent/mvn'"):
        LocalNeo4j(bad).build()


def test_port_taken_by_another_process(settings: Settings, tmp_path: Path, listener: int) -> None:
    taken = _variant(settings, home=tmp_path / "neo4j", port=listener)
    server = LocalNeo4j(taken)
    with pytest.raises(ServerError, match=rf"port {listener} on 127\.0\.0\.1 is already in use by another process"):
        server.start()
    assert not server.pid_file.exists()
    assert not server.status().running


def test_external_uri_starts_nothing(settings: Settings, tmp_path: Path) -> None:
    external = _variant(settings, home=tmp_path / "neo4j").model_copy(update={"neo4j_uri": "bolt://db.invalid:7687"})
    assert ensure_server(external) is None
    assert not (tmp_path / "neo4j").exists()
    result = CliRunner().invoke(db, ["start"], obj=external)
    assert result.exit_code == 0 and "using the external server" in result.output
