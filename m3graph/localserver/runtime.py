"""Which Neo4j line the local server runs, which JVM runs it, and the command line that starts it.

Two lines are supported (2026.x and 5.26 LTS); each needs a minimum Java. The choice is made once per server
from the settings, the JDKs found on this machine, and the line that wrote an existing store (a start never
upgrades a store as a side effect: that is `m3graph db upgrade`).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from m3graph.errors import ServerError
from m3graph.localserver.processes import LAUNCHER_MAIN
from m3graph.settings import LocalServer

log = logging.getLogger(__name__)

_JDK_ROOTS = (Path("/usr/lib/jvm"), Path("/opt/java"))
_warned: set[str] = set()


@dataclass(frozen=True)
class NeoLine:
    """One supported Neo4j release line: its Maven profile (launcher/pom.xml pins the exact version) and needs."""

    key: str
    profile: str
    min_java: int
    apoc: bool
    # Typed Neo4j settings the launcher sets (resolved by name through Neo4j's own declarations).
    settings: tuple[tuple[str, str], ...]


LINES: dict[str, NeoLine] = {
    # 2026.x: one segment after bulk population (FULL compaction) keeps HNSW queries at the single-graph cost.
    "2026": NeoLine("2026", "neo4j-2026", 21, False,
                    (("internal.dbms.index.vector.post_population_compaction", "FULL"),)),
    # 5.26 populates vector indexes with merge factor 1,000 (hundreds of segments at 10^6); 100 merges them.
    "5.26": NeoLine("5.26", "neo4j-526", 17, True,
                    (("internal.dbms.index.vector.population_merge_factor", "100"),)),
}


# Neo4j's limit on the memory of EACH transaction (`dbms.memory.transaction.total.max` is the shared pool).
TX_MEMORY_SETTING = "db.memory.transaction.max"


@dataclass(frozen=True)
class Java:
    path: str
    major: int

    @property
    def home(self) -> Path:
        return Path(self.path).resolve().parent.parent


def choose(local: LocalServer, store_line: str | None, home: Path) -> tuple[NeoLine, Java]:
    """The Neo4j line and the JVM that runs it.

    "auto" runs 2026.x when a JDK >= 21 exists and falls back to 5.26 with a warning otherwise; an existing
    store (`store_line`) keeps its line under "auto".
    """
    javas = find_javas(local.java)
    wanted: str = local.neo4j_version  # a Neo4j line (a key of LINES) once "auto" is resolved
    if wanted == "auto":
        if store_line is not None:
            wanted = store_line
            if store_line == "5.26" and any(j.major >= LINES["2026"].min_java for j in javas):
                warn_once(f"store-{home}",
                          f"the store in {home} was written by Neo4j 5.26: running 5.26; "
                          "`m3graph db upgrade` moves it to 2026.x (after a backup)")
        elif any(j.major >= LINES["2026"].min_java for j in javas):
            wanted = "2026"
        else:
            found = ", ".join(f"{j.path} (Java {j.major})" for j in javas)
            warn_once("no-jdk21", f"no JDK >= 21 found ({found}): running Neo4j 5.26 LTS instead of 2026.x; "
                                  "install a JDK 21+ or set M3GRAPH_LOCAL__JAVA to one")
            wanted = "5.26"
    line = LINES[wanted]
    usable = [j for j in javas if j.major >= line.min_java]
    if not usable:
        found = ", ".join(f"{j.path} is Java {j.major}" for j in javas)
        raise ServerError(
            f"Neo4j {line.key} needs Java {line.min_java} or newer; {found} "
            "(set M3GRAPH_LOCAL__JAVA to a newer java, or M3GRAPH_LOCAL__NEO4J_VERSION=5.26 for Java 17)"
        )
    if line.key == "5.26":
        # 5.26 is supported on Java 17 and 21: prefer the newest of those, then the oldest newer one.
        supported = [j for j in usable if j.major <= 21]
        java = max(supported, key=lambda j: j.major) if supported else min(usable, key=lambda j: j.major)
    else:
        java = max(usable, key=lambda j: j.major)
    return line, java


def launcher_command(java: Java, line: NeoLine, build_dir: Path, local: LocalServer, home: Path, import_dir: Path,
                     user: str | None, password_file: Path | None) -> list[str]:
    """The command line that runs the launcher of `build_dir` on `java` for the server `home`."""
    classpath = os.pathsep.join(
        [str(build_dir / "m3graph-launcher.jar"), str(build_dir / "lib" / "*"), str(build_dir / "plugins" / "*")]
    )
    jvm = [java.path, f"-Xmx{local.heap_mb}m", "-XX:+ExitOnOutOfMemoryError"]
    # SIMD distances in Lucene (Panama vector API); Java 22+ also asks for native access to be explicit.
    jvm += ["--add-modules", "jdk.incubator.vector"]
    if java.major >= 22:
        jvm.append("--enable-native-access=ALL-UNNAMED")
    cmd = [
        *jvm,
        "-cp",
        classpath,
        LAUNCHER_MAIN,
        "--home",
        str(home),
        "--host",
        local.host,
        "--port",
        str(local.port),
        "--pagecache-mb",
        str(local.pagecache_mb),
        "--tx-timeout-s",
        str(local.tx_timeout_s),
        "--import-dir",
        str(import_dir),
    ]
    if line.apoc:
        cmd += ["--plugins", str(build_dir / "plugins")]
    if password_file is not None and user is not None:
        cmd += ["--user", user, "--password-file", str(password_file)]
    else:
        cmd.append("--no-auth")
    for name, value in {**dict(line.settings), **memory_settings(local), **local.neo4j_settings}.items():
        cmd += ["--setting", f"{name}={value}"]
    return cmd


def memory_settings(local: LocalServer) -> dict[str, str]:
    """The per-transaction memory cap (same name on 5.26 and 2026.x; static on Community, so set at start)."""
    return {TX_MEMORY_SETTING: f"{local.tx_memory_max_mb}m"} if local.tx_memory_max_mb > 0 else {}


def find_javas(configured: str) -> list[Java]:
    """Every JVM we may use: the configured one only, or (auto) JAVA_HOME, PATH and the usual JDK roots."""
    hint = "install a JDK 21+ (or 17 for Neo4j 5.26) or set M3GRAPH_LOCAL__JAVA"
    if configured != "auto":
        path = which(configured, "java", hint)
        major = java_major(path)
        if major is None:
            raise ServerError(f"could not determine the Java version of {path} ({path} -version failed)")
        return [Java(path, major)]
    candidates: list[str] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    if (on_path := shutil.which("java")) is not None:
        candidates.append(on_path)
    for root in _JDK_ROOTS:
        if root.is_dir():
            candidates += [str(p) for p in sorted(root.glob("*/bin/java"))]
    seen: dict[Path, Java] = {}
    for candidate in candidates:
        if not os.access(candidate, os.X_OK):
            continue
        real = Path(candidate).resolve()
        if real in seen:
            continue
        major = java_major(candidate)
        if major is not None:
            seen[real] = Java(str(real), major)
    if not seen:
        raise ServerError(f"java not found: no JDK in JAVA_HOME, on PATH or under /usr/lib/jvm; {hint}")
    return list(seen.values())


def which(command: str, what: str, hint: str) -> str:
    found = shutil.which(command)
    if found is None:
        raise ServerError(f"{what} not found: {command!r} is not an executable on PATH; {hint}")
    return found


def java_major(java: str) -> int | None:
    """`java -version` parsed; cached, since every LocalNeo4j asks and each call starts a JVM."""
    return _java_major_cached(str(Path(java).resolve()) if os.sep in java else java)


@functools.lru_cache(maxsize=32)
def _java_major_cached(java: str) -> int | None:
    try:
        proc = subprocess.run(
            [java, "-version"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if proc.returncode != 0 or match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_392" style
        major = int(match.group(2))
    return major


def warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning("%s", message)
