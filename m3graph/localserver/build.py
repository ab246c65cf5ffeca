"""Compile the Java launcher (``launcher/``) with Maven and collect its jars, once per Neo4j line.

A build directory is complete when it has the launcher jar, Neo4j's kernel jar in ``lib/`` and (5.26) APOC in
``plugins/``; its stamp hashes the pom and the Java source, so a version bump rebuilds by itself instead of
leaving two Neo4j versions on the classpath.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from m3graph.errors import ServerError
from m3graph.file_locks import exclusive as locked
from m3graph.localserver.files import tail
from m3graph.localserver.runtime import Java, NeoLine, which

log = logging.getLogger(__name__)

# A plain directory next to this module: Maven needs a real path, and the package is never zipped.
LAUNCHER_DIR = Path(__file__).resolve().parent / "launcher"


def build(build_dir: Path, line: NeoLine, java: Java, mvn: str, force: bool = False,
          launcher_dir: Path = LAUNCHER_DIR) -> Path:
    """Build the launcher of `line` into `build_dir`; a no-op when an up-to-date build exists."""
    build_dir.mkdir(parents=True, exist_ok=True)
    with locked(build_dir / ".build.lock"):
        stamp = source_digest(line, launcher_dir)
        if not force and build_complete(build_dir, line, stamp):
            return build_dir
        mvn_path = which(mvn, "mvn", "install Maven (Debian: apt-get install maven)")
        # copy-dependencies never deletes, so stale jars from an older version must go first.
        for sub in ("lib", "plugins"):
            shutil.rmtree(build_dir / sub, ignore_errors=True)
        (build_dir / "build.stamp").unlink(missing_ok=True)
        log_path = build_dir / "maven.log"
        cmd = [
            mvn_path,
            "-B",
            "-q",
            "-Dstyle.color=never",
            "-f",
            str(launcher_dir / "pom.xml"),
            "package",
            f"-P{line.profile}",
            f"-DbuildDir={build_dir}",
        ]
        # Maven compiles with the JDK that will run the server (2026.x needs release 21).
        env = dict(os.environ, JAVA_HOME=str(java.home))
        log.info("building the Neo4j %s launcher in %s (first run downloads ~150 MB of jars)", line.key, build_dir)
        started = time.monotonic()
        with log_path.open("w", encoding="utf-8") as out:
            try:
                rc = subprocess.run(
                    cmd,
                    cwd=launcher_dir,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    check=False,
                ).returncode
            except OSError as exc:
                raise ServerError(f"could not run Maven ({mvn_path}): {exc}") from exc
        if rc != 0:
            raise ServerError(
                f"Maven failed with exit code {rc} building the launcher in {build_dir}; "
                f"full log: {log_path}\n{tail(log_path)}"
            )
        if not build_complete(build_dir, line, None):
            raise ServerError(
                f"Maven succeeded but {build_dir} lacks m3graph-launcher.jar, lib/ or plugins/ (APOC); "
                f"full log: {log_path}\n{tail(log_path)}"
            )
        (build_dir / "build.stamp").write_text(stamp + "\n", encoding="utf-8")
        log.info("launcher built in %.1f s", time.monotonic() - started)
    return build_dir


def source_digest(line: NeoLine, launcher_dir: Path = LAUNCHER_DIR) -> str:
    pom = launcher_dir / "pom.xml"
    if not pom.is_file():
        raise ServerError(f"launcher sources missing: {pom} not found (broken installation of m3graph?)")
    digest = hashlib.sha256(line.profile.encode())
    for path in [pom, *sorted((launcher_dir / "src").rglob("*.java"))]:
        digest.update(path.relative_to(launcher_dir).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def build_complete(build_dir: Path, line: NeoLine, stamp: str | None) -> bool:
    if not (build_dir / "m3graph-launcher.jar").is_file():
        return False
    if kernel_version(build_dir / "lib") is None:
        return False
    if line.apoc and not any((build_dir / "plugins").glob("apoc-core-*.jar")):
        return False
    if stamp is None:
        return True
    stamp_file = build_dir / "build.stamp"
    return stamp_file.is_file() and stamp_file.read_text(encoding="utf-8").strip() == stamp


def kernel_version(lib: Path) -> str | None:
    """The Neo4j version of a build, from its kernel jar (neo4j-<version>.jar)."""
    for jar in lib.glob("neo4j-*.jar"):
        match = re.fullmatch(r"neo4j-(\d[\w.]*)\.jar", jar.name)
        if match:
            return match.group(1)
    return None
