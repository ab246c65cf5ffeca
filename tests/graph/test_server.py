"""The local Neo4j server, exercised for real: a JVM, a Bolt socket, auth, clean shutdown, backups."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from neo4j import Driver, GraphDatabase
from neo4j.exceptions import AuthError, ClientError, DriverError, Neo4jError

from m3graph.cli.db import db
from m3graph.errors import ServerError
from m3graph.localserver import backup as store_copy
from m3graph.localserver.runtime import LINES
from m3graph.localserver.server import STORE_MARKER, LocalNeo4j, ServerStatus, ensure_server
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


def test_components_report_the_configured_line(driver: Driver, local_server: ServerStatus,
                                               settings: Settings) -> None:
    records, _, _ = driver.execute_query("CALL dbms.components() YIELD name, versions, edition RETURN *")
    kernel = next(r for r in records if r["name"] == "Neo4j Kernel")
    line = LocalNeo4j(settings).line
    assert kernel["versions"][0].startswith("5.26." if line.key == "5.26" else "2026.")
    assert kernel["versions"][0] == local_server.neo4j_version
    assert kernel["edition"] == "community"


def test_apoc_only_on_526_and_never_unrestricted(driver: Driver, local_server: ServerStatus,
                                                settings: Settings) -> None:
    """5.26 keeps APOC core for users who want it; no procedure runs unrestricted (no apoc.* sandbox escape)."""
    records, _, _ = driver.execute_query(
        "SHOW PROCEDURES YIELD name WHERE name STARTS WITH 'apoc.' RETURN count(*) AS n")
    assert (records[0]["n"] > 0) is LocalNeo4j(settings).line.apoc
    settings_rows, _, _ = driver.execute_query(
        "SHOW SETTINGS YIELD name, value WHERE name = 'dbms.security.procedures.unrestricted' RETURN value")
    assert settings_rows[0]["value"] == ""


def test_auth_is_on_and_the_password_never_reaches_disk_or_argv(local_server: ServerStatus,
                                                              settings: Settings) -> None:
    assert local_server.auth is True
    server = LocalNeo4j(settings)
    for wrong in ("not-the-password", "**********"):  # the second is what a masked settings dump carries
        with GraphDatabase.driver(server.bolt_uri, auth=(settings.neo4j_user, wrong)) as drv, \
                pytest.raises(AuthError):
            drv.verify_connectivity()
    secret = settings.neo4j_password.get_secret_value().encode()
    assert not (server.home / ".initial-password").exists()
    assert secret not in Path(f"/proc/{local_server.pid}/cmdline").read_bytes()
    for path in (server.log_file, server.debug_log, server.ready_file):
        assert secret not in path.read_bytes(), path
    assert "auth: set the configured initial password" in server.log_file.read_text()


def test_load_csv_is_confined_to_the_import_directory(driver: Driver, local_server: ServerStatus,
                                                      settings: Settings) -> None:
    import_dir = LocalNeo4j(settings).import_dir
    (import_dir / "probe.csv").write_text("a\n1\n2\n")
    records, _, _ = driver.execute_query("LOAD CSV WITH HEADERS FROM 'file:///probe.csv' AS r RETURN count(r) AS n")
    assert records[0]["n"] == 2
    outside = import_dir.parent / "outside.csv"
    outside.write_text("a\n1\n")
    for url in ("file:///etc/passwd", "file:///../outside.csv", f"file://{outside}"):
        with pytest.raises(ClientError):
            driver.execute_query(f"LOAD CSV FROM '{url}' AS r RETURN count(r) AS n")


def test_status_reports_simd(local_server: ServerStatus, settings: Settings) -> None:
    """Lucene's vectorization line, captured by the launcher at start and shown by `m3graph db status`."""
    line, java = LocalNeo4j(settings).runtime()
    assert local_server.simd is not None
    if line.key == "2026" and java.major >= 21:
        assert "vector incubator API enabled" in local_server.simd, local_server.simd
    result = CliRunner().invoke(db, ["status"], obj=settings)
    assert f"simd:    {local_server.simd}" in result.output
    assert f"neo4j:   {local_server.neo4j_version}" in result.output and "auth:    on" in result.output


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
        assert server.last_stop is not None and server.last_stop.clean
        stopped = server.status()
        assert not stopped.running and stopped.pid is None
        assert not server.pid_file.exists() and not server.ready_file.exists()
        assert server.stop() is False

        second = server.start()
        assert second.running and not second.reused
        assert second.pid != first.pid
        assert second.recovered is False
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


# ---------------------------------------------------------------------------------------------- shutdown, backups


@pytest.fixture
def own_server(settings: Settings, tmp_path: Path) -> Iterator[LocalNeo4j]:
    """A second server on its own home and port (session port + 1), stopped whatever the test did."""
    if not settings.uses_local_server:
        pytest.skip("NEO4J_URI is set: no local server management")
    server = LocalNeo4j(_variant(settings, home=tmp_path / "neo4j", port=settings.local.port + 1))
    server.build()
    yield server
    server.stop(stall_s=30)


def _auth(server: LocalNeo4j) -> tuple[str, str]:
    return server.settings.neo4j_user, server.settings.neo4j_password.get_secret_value()


def _load_until_stopped(server: LocalNeo4j, stop: threading.Event, counts: list[int]) -> None:
    """Write batches until the server goes away; each committed batch is counted."""
    try:
        with GraphDatabase.driver(server.bolt_uri, auth=_auth(server)) as drv:
            while not stop.is_set():
                drv.execute_query("UNWIND range(1, 2000) AS i CREATE (:Load {i: i, pad: 'x' + toString(i)})")
                counts.append(2000)
    except (DriverError, Neo4jError, OSError):
        return  # the server shut down under the load: what this test wants


def test_stop_mid_load_is_clean_and_the_next_start_needs_no_recovery(own_server: LocalNeo4j) -> None:
    own_server.start()
    stop, counts = threading.Event(), []
    loader = threading.Thread(target=_load_until_stopped, args=(own_server, stop, counts))
    loader.start()
    try:
        while len(counts) < 5:  # several committed batches, more in flight
            loader.join(0.1)
        reports: list[Any] = []
        assert own_server.stop(progress=reports.append) is True
    finally:
        stop.set()
        loader.join(60)
    assert own_server.last_stop is not None and own_server.last_stop.clean
    assert "shutdown: done" in own_server.log_file.read_text()
    again = own_server.start()
    assert again.recovered is False
    with GraphDatabase.driver(own_server.bolt_uri, auth=_auth(own_server)) as drv:
        records, _, _ = drv.execute_query("MATCH (n:Load) RETURN count(n) AS n")
    assert records[0]["n"] >= sum(counts)  # every acknowledged batch survived


def test_a_killed_server_is_recovered_and_reported(own_server: LocalNeo4j) -> None:
    """The detector behind the test above can fail: SIGKILL after a write makes the next start recover."""
    first = own_server.start()
    with GraphDatabase.driver(own_server.bolt_uri, auth=_auth(own_server)) as drv:
        drv.execute_query("UNWIND range(1, 5000) AS i CREATE (:Load {i: i})")
    assert first.pid is not None
    os.kill(first.pid, signal.SIGKILL)
    os.waitpid(first.pid, 0)  # our child: reaped once every thread is gone (and the port is free)
    own_server.stop()  # clears the state files
    again = own_server.start()
    assert again.recovered is True
    with GraphDatabase.driver(own_server.bolt_uri, auth=_auth(own_server)) as drv:
        records, _, _ = drv.execute_query("MATCH (n:Load) RETURN count(n) AS n")
    assert records[0]["n"] == 5000


def test_stop_cli_reports_a_clean_stop(own_server: LocalNeo4j) -> None:
    own_server.start()
    result = CliRunner().invoke(db, ["stop"], obj=own_server.settings)
    assert result.exit_code == 0, result.output
    assert "stopped cleanly in" in result.output
    assert not own_server.status().running


def test_backup_and_restore_round_trip(own_server: LocalNeo4j, tmp_path: Path) -> None:
    own_server.start()
    # Files shared in conversations live in <data_dir>/files beside the store: the backup carries them too.
    settings = own_server.settings.model_copy(update={"data_dir": tmp_path / "data"})
    shared = settings.data_dir / "files" / "ab" / "ab12.txt"
    shared.parent.mkdir(parents=True)
    shared.write_text("in the backup", encoding="utf-8")
    with GraphDatabase.driver(own_server.bolt_uri, auth=_auth(own_server)) as drv:
        drv.execute_query("CREATE (:Probe {name: 'in the backup'})")
    runner = CliRunner()
    target = tmp_path / "backup"
    result = runner.invoke(db, ["backup", str(target)], obj=settings)
    assert result.exit_code == 0, result.output
    manifest = json.loads((target / "m3graph-backup.json").read_text())
    assert manifest["neo4j_line"] == own_server.line.key and manifest["shared_files"] is True
    assert (target / "files" / "ab" / "ab12.txt").read_text(encoding="utf-8") == "in the backup"
    assert own_server.status().running  # it was running, so it runs again
    again = runner.invoke(db, ["backup", str(target)], obj=settings)
    assert again.exit_code != 0 and "not an empty directory" in again.output

    with GraphDatabase.driver(own_server.bolt_uri, auth=_auth(own_server)) as drv:
        drv.execute_query("MATCH (p:Probe) SET p.name = 'after the backup' CREATE (:Probe {name: 'later'})")
    shared.write_text("after the backup", encoding="utf-8")
    result = runner.invoke(db, ["restore", str(target)], obj=settings)
    assert result.exit_code == 0, result.output
    with GraphDatabase.driver(own_server.bolt_uri, auth=_auth(own_server)) as drv:
        records, _, _ = drv.execute_query("MATCH (p:Probe) RETURN p.name AS name")
    assert [r["name"] for r in records] == ["in the backup"]
    kept = list(own_server.home.glob("data.before-restore-*"))
    assert len(kept) == 1 and (kept[0] / "databases").is_dir()  # the replaced store is set aside, not deleted
    assert shared.read_text(encoding="utf-8") == "in the backup"
    aside = list(settings.data_dir.glob("files.before-restore-*"))
    assert len(aside) == 1 and (aside[0] / "ab" / "ab12.txt").read_text(encoding="utf-8") == "after the backup"


def test_restore_refuses_what_is_not_a_backup(own_server: LocalNeo4j, tmp_path: Path) -> None:
    (tmp_path / "junk").mkdir()
    with pytest.raises(ServerError, match="is not an m3graph backup"):
        store_copy.restore(own_server.settings, tmp_path / "junk")
    assert not own_server.has_store()


def test_a_526_store_is_never_opened_by_2026_silently(settings: Settings, tmp_path: Path) -> None:
    """The store guard runs before any JVM: a 5.26 store with 2026 requested is refused, naming the way out."""
    home = tmp_path / "neo4j"
    (home / "data" / "databases" / "neo4j").mkdir(parents=True)
    (home / STORE_MARKER).write_text(json.dumps({"neo4j_line": "5.26", "neo4j_version": "5.26.30"}))
    newer = LocalNeo4j(_variant(settings, home=home, port=settings.local.port + 1, neo4j_version="2026"))
    if newer.runtime()[1].major < LINES["2026"].min_java:
        pytest.skip("no JDK 21+ on this machine")
    newer.build()
    with pytest.raises(ServerError, match=r"written by Neo4j 5\.26 .*m3graph db upgrade"):
        newer.start()
    assert not newer.status().running
    auto = LocalNeo4j(_variant(settings, home=home, neo4j_version="auto"))
    assert auto.line.key == "5.26"  # auto keeps the store's line instead of upgrading it
    (home / STORE_MARKER).write_text(json.dumps({"neo4j_line": "2026", "neo4j_version": "2026.09.0"}))
    older = LocalNeo4j(_variant(settings, home=home, port=settings.local.port + 1, neo4j_version="5.26"))
    older.build()
    with pytest.raises(ServerError, match="stores do not downgrade"):
        older.start()


def test_upgrade_moves_a_526_store_with_its_data_and_keeps_a_backup(settings: Settings, tmp_path: Path) -> None:
    """`m3graph db upgrade`, run for real: a 5.26 store with data opens on 2026.x with the data, the users and an
    index intact, and the 5.26 copy made first is left in place (the way back)."""
    if not settings.uses_local_server:
        pytest.skip("NEO4J_URI is set: no local server management")
    home, port = tmp_path / "neo4j", settings.local.port + 4  # +1 own_server, +2 the APOC server
    old = LocalNeo4j(_variant(settings, home=home, port=port, neo4j_version="5.26"))
    if LocalNeo4j(_variant(settings, home=home, port=port, neo4j_version="2026")).runtime()[1].major < \
            LINES["2026"].min_java:
        pytest.skip("no JDK 21+ on this machine")
    old.build()
    old.start()
    try:
        with GraphDatabase.driver(old.bolt_uri, auth=_auth(old)) as drv:
            drv.execute_query("CREATE INDEX keep_i IF NOT EXISTS FOR (n:Keep) ON (n.i)")
            drv.execute_query("UNWIND range(1, 500) AS i CREATE (:Keep {i: i})")
    finally:
        old.stop(stall_s=30)
    assert old.store_line() == "5.26"
    report, newer = store_copy.upgrade(_variant(settings, home=home, port=port, neo4j_version="auto"),
                                       tmp_path / "backup")
    try:
        assert newer.status().neo4j_version.startswith("2026.")
        assert newer.store_line() == "2026"
        with GraphDatabase.driver(newer.bolt_uri, auth=_auth(newer)) as drv:  # the same user and password
            records, _, _ = drv.execute_query("MATCH (n:Keep) RETURN count(n) AS n, max(n.i) AS top")
            assert (records[0]["n"], records[0]["top"]) == (500, 500)
            names, _, _ = drv.execute_query("SHOW INDEXES YIELD name RETURN collect(name) AS names")
            assert "keep_i" in names[0]["names"]
    finally:
        newer.stop(stall_s=30)
    assert report.neo4j_line == "5.26" and report.target == tmp_path / "backup"
    assert (tmp_path / "backup").is_dir() and report.files > 0
    with pytest.raises(ServerError, match="already on Neo4j 2026"):
        store_copy.upgrade(_variant(settings, home=home, port=port, neo4j_version="auto"))
