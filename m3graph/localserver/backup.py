"""Consistent copies of the local server's store: backup, restore, and the one-way 5.26 -> 2026.x upgrade.

Neo4j Community has no online backup, so a copy is only consistent when the store is closed: every operation
here stops the server cleanly (a checkpoint), copies, and starts it again if it was running. The copy is the
whole `data/` directory (databases, transaction logs, the system database with the users), plus a manifest
naming the Neo4j line that wrote it, so a restore can refuse a store the configured Neo4j cannot open.
Files shared in conversations live outside the store (content-addressed under ``<data_dir>/files/``, referenced by
`File` nodes): they are copied too, into the backup's ``files/``, and restored beside the store, so a restored
graph never points at a file that is not there.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from m3graph.errors import ServerError
from m3graph.localserver.runtime import LINES
from m3graph.localserver.server import STORE_MARKER, LocalNeo4j
from m3graph.localserver.shutdown import StopProgress
from m3graph.settings import Settings

log = logging.getLogger(__name__)

MANIFEST = "m3graph-backup.json"
SHARED_FILES = "files"  # <data_dir>/files: the copies of files shared in conversations


@dataclass(frozen=True)
class CopyReport:
    source: Path
    target: Path
    files: int
    bytes: int
    seconds: float
    neo4j_line: str
    restarted: bool


def _local(settings: Settings) -> LocalNeo4j:
    if not settings.uses_local_server:
        raise ServerError(
            f"NEO4J_URI is set ({settings.bolt_uri}): back up that server with its own tools "
            "(neo4j-admin database dump); m3graph backs up only its local server"
        )
    return LocalNeo4j(settings)


def _stop_cleanly(server: LocalNeo4j, progress: Callable[[StopProgress], None] | None) -> bool:
    """Stop for a copy; a stop that had to SIGKILL leaves a store needing recovery, which is no backup."""
    if not server.status().running:
        return False
    server.stop(progress=progress)
    if server.last_stop is not None and not server.last_stop.clean:
        raise ServerError(
            f"the server for {server.home} did not stop cleanly (killed after stalling); start it once so it "
            "recovers, then stop it and back up again"
        )
    return True


def _copy_tree(source: Path, target: Path) -> tuple[int, int]:
    shutil.copytree(source, target, symlinks=True)
    files = [p for p in target.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def backup(
    settings: Settings, target: Path, progress: Callable[[StopProgress], None] | None = None
) -> CopyReport:
    """Stop, copy `data/` to `target`, start again if it was running. `target` must not exist or be empty."""
    server = _local(settings)
    target = target.expanduser().resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ServerError(f"backup target {target} exists and is not an empty directory; choose a new one")
    if not server.has_store():
        raise ServerError(f"no store to back up in {server.home} (the server has never been started there)")
    if target.is_relative_to(server.home):
        raise ServerError(f"backup target {target} is inside the server home {server.home}; choose another place")
    line = server.store_line() or "5.26"
    began = time.monotonic()
    was_running = _stop_cleanly(server, progress)
    try:
        target.mkdir(parents=True, exist_ok=True)
        files, size = _copy_tree(server.home / "data", target / "data")
        shared = settings.data_dir / SHARED_FILES
        if shared.is_dir():
            n, b = _copy_tree(shared, target / SHARED_FILES)
            files, size = files + n, size + b
        marker = server.home / STORE_MARKER
        version = None
        if marker.is_file():
            version = json.loads(marker.read_text(encoding="utf-8")).get("neo4j_version")
        manifest = {
            "neo4j_line": line,
            "neo4j_version": version,
            "created_at": datetime.now(UTC).isoformat(),
            "source_home": str(server.home),
            "files": files,
            "bytes": size,
            "shared_files": (target / SHARED_FILES).is_dir(),
        }
        (target / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    finally:
        if was_running:
            server.start()
    log.info("backed up %s (%d files, %.1f MB) to %s", server.home, files, size / 1e6, target)
    return CopyReport(server.home, target, files, size, time.monotonic() - began, line, was_running)


def read_manifest(source: Path) -> dict[str, object]:
    path = source / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ServerError(f"{source} is not an m3graph backup: cannot read {path} ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("neo4j_line") not in LINES:
        raise ServerError(f"{path} names no known Neo4j line (expected one of {sorted(LINES)})")
    if not (source / "data" / "databases").is_dir():
        raise ServerError(f"{source} is not an m3graph backup: {source / 'data' / 'databases'} is missing")
    return manifest


def restore(
    settings: Settings, source: Path, progress: Callable[[StopProgress], None] | None = None
) -> CopyReport:
    """Stop, set the current `data/` aside (never deleted), copy the backup in, start again if it was running."""
    server = _local(settings)
    source = source.expanduser().resolve()
    manifest = read_manifest(source)
    line = str(manifest["neo4j_line"])
    began = time.monotonic()
    was_running = _stop_cleanly(server, progress)
    server.home.mkdir(parents=True, exist_ok=True)
    data = server.home / "data"
    if data.exists():
        aside = server.home / f"data.before-restore-{datetime.now(UTC):%Y%m%dT%H%M%S}"
        data.rename(aside)
        log.info("the previous store is kept in %s", aside)
    files, size = _copy_tree(source / "data", data)
    if (source / SHARED_FILES).is_dir():  # the backup's shared files replace the current ones (kept aside)
        shared = settings.data_dir / SHARED_FILES
        if shared.exists():
            shared.rename(shared.with_name(f"{SHARED_FILES}.before-restore-{datetime.now(UTC):%Y%m%dT%H%M%S}"))
        n, b = _copy_tree(source / SHARED_FILES, shared)
        files, size = files + n, size + b
    marker = {"neo4j_line": line, "neo4j_version": manifest.get("neo4j_version")}
    (server.home / STORE_MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")
    if was_running:
        LocalNeo4j(settings).start()  # a fresh instance: the store's line may differ from the one stopped
    return CopyReport(source, server.home, files, size, time.monotonic() - began, line, was_running)


def upgrade(
    settings: Settings, backup_dir: Path | None = None, progress: Callable[[StopProgress], None] | None = None
) -> tuple[CopyReport, LocalNeo4j]:
    """Back up a 5.26 store, then open it with Neo4j 2026.x (one way: 5.26 cannot read it afterwards)."""
    server = _local(settings)
    have = server.store_line()
    if have is None:
        raise ServerError(f"no store in {server.home}: nothing to upgrade (a new store starts on 2026.x)")
    if have == "2026":
        raise ServerError(f"the store in {server.home} is already on Neo4j 2026.x")
    newer = settings.model_copy(update={"local": settings.local.model_copy(update={"neo4j_version": "2026"})})
    target_server = LocalNeo4j(newer)
    target_server.runtime()  # fails here, before any copy, when no JDK 21+ exists
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    target = backup_dir or server.home.parent / f"{server.home.name}-backup-{have}-{stamp}"
    report = backup(settings, target, progress)
    if server.status().running:
        server.stop(progress=progress)
    target_server.build()
    target_server.start(allow_upgrade=True)
    log.info("store %s upgraded from Neo4j %s to %s; backup in %s", server.home, have,
             target_server.status().neo4j_version, target)
    return report, target_server
