"""Build, start and stop the embedded Neo4j that m3graph uses when no `NEO4J_URI` is given.

The server is a small Java launcher (``launcher/``) around Neo4j Community, so a laptop or CI machine needs only a
JDK and Maven, not Docker or a server tarball. The Python side owns the process: the pid file and the ``ready``
file in the server home are the only shared state, so any m3graph process (CLI, test session, worker) can find,
reuse or stop a server that another one started.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from neo4j import GraphDatabase
from neo4j.exceptions import DriverError, Neo4jError

from m3graph.errors import ServerError
from m3graph.settings import Settings

log = logging.getLogger(__name__)

LAUNCHER_MAIN = "org.m3graph.launcher.Main"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_POLL_S = 0.2
STORE_MARKER = "m3graph-store.json"
# Lines in the launcher log / debug.log that say something about a start.
_RECOVERY = re.compile(r"Recovery in '\w+' mode completed|Recovery completed|recovery required", re.I)
_JDK_ROOTS = (Path("/usr/lib/jvm"), Path("/opt/java"))


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
_warned: set[str] = set()


@dataclass(frozen=True)
class Java:
    path: str
    major: int

    @property
    def home(self) -> Path:
        return Path(self.path).resolve().parent.parent


@dataclass(frozen=True)
class ServerStatus:
    """What a caller needs to connect to, report on, or benchmark the local server."""

    running: bool
    pid: int | None
    bolt_uri: str
    home: Path
    rss_mb: float | None = None
    reused: bool = False
    startup_s: float | None = None  # cold-start seconds; None when reused or not waited for
    ready: bool = False  # the launcher wrote its ready file (the database accepted work)
    neo4j_version: str | None = None  # e.g. "2026.09.0", from the running launcher's jars
    simd: str | None = None  # Lucene's vectorization line, as the launcher captured it at start
    auth: bool | None = None
    recovered: bool | None = None  # this start ran crash recovery (the previous stop was not clean)


@dataclass(frozen=True)
class StopProgress:
    """One progress report of a shutdown, for `m3graph db stop` to print."""

    pid: int
    elapsed_s: float
    idle_s: float  # seconds since the last sign of progress (CPU, store files, log)
    cpu_s: float | None
    last_log: str


@dataclass(frozen=True)
class StopReport:
    pid: int
    seconds: float
    clean: bool  # False: it stalled for local.stop_stall_s and was SIGKILLed (the next start recovers)


class LocalNeo4j:
    """One local server, identified by its home directory."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._runtime: tuple[NeoLine, Java] | None = None
        self.last_stop: StopReport | None = None

    # ------------------------------------------------------------------ paths

    @property
    def home(self) -> Path:
        # Absolute, because the launcher records it in its command line and the pid check compares against it.
        return self.settings.local.home.expanduser().resolve()

    @property
    def build_root(self) -> Path:
        configured = self.settings.local.build_dir
        if configured is not None:
            return configured.expanduser().resolve()
        return (self.home.parent / "launcher-build").resolve()

    @property
    def build_dir(self) -> Path:
        """The build of the line this server runs (one directory per line, so both can stay built)."""
        return self.build_root / f"neo4j-{self.line.key}"

    @property
    def launcher_dir(self) -> Path:
        # A plain directory next to this module: Maven needs a real path, and the package is never zipped.
        return Path(__file__).resolve().parent / "launcher"

    @property
    def pid_file(self) -> Path:
        return self.home / "m3graph.pid"

    @property
    def ready_file(self) -> Path:
        return self.home / "ready"

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "launcher.out"

    @property
    def debug_log(self) -> Path:
        return self.home / "logs" / "debug.log"

    @property
    def import_dir(self) -> Path:
        configured = self.settings.local.import_dir
        return configured.expanduser().resolve() if configured is not None else self.home / "import"

    @property
    def bolt_uri(self) -> str:
        # The local address, not settings.bolt_uri: with NEO4J_URI set that points at another server.
        host = self.settings.local.host
        host = f"[{host}]" if ":" in host else host
        return f"bolt://{host}:{self.settings.local.port}"

    # ------------------------------------------------------------------ which Neo4j, which Java

    @property
    def line(self) -> NeoLine:
        return self.runtime()[0]

    def runtime(self) -> tuple[NeoLine, Java]:
        """The Neo4j line and the JVM that runs it, chosen once per instance.

        "auto" runs 2026.x when a JDK >= 21 exists and falls back to 5.26 with a warning otherwise; an existing
        store keeps its line under "auto" (upgrading is `m3graph db upgrade`, never a side effect of a start).
        """
        if self._runtime is not None:
            return self._runtime
        local = self.settings.local
        javas = self._javas()
        wanted: str = local.neo4j_version
        if wanted == "auto":
            store = self.store_line()
            if store is not None:
                wanted = store
                if store == "5.26" and any(j.major >= LINES["2026"].min_java for j in javas):
                    _warn_once(f"store-{self.home}",
                               f"the store in {self.home} was written by Neo4j 5.26: running 5.26; "
                               "`m3graph db upgrade` moves it to 2026.x (after a backup)")
            elif any(j.major >= LINES["2026"].min_java for j in javas):
                wanted = "2026"
            else:
                found = ", ".join(f"{j.path} (Java {j.major})" for j in javas)
                _warn_once("no-jdk21", f"no JDK >= 21 found ({found}): running Neo4j 5.26 LTS instead of 2026.x; "
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
        self._runtime = (line, java)
        return self._runtime

    def _javas(self) -> list[Java]:
        """Every JVM we may use: the configured one only, or (auto) JAVA_HOME, PATH and the usual JDK roots."""
        configured = self.settings.local.java
        hint = "install a JDK 21+ (or 17 for Neo4j 5.26) or set M3GRAPH_LOCAL__JAVA"
        if configured != "auto":
            path = self._which(configured, "java", hint)
            major = _java_major(path)
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
            major = _java_major(candidate)
            if major is not None:
                seen[real] = Java(str(real), major)
        if not seen:
            raise ServerError(f"java not found: no JDK in JAVA_HOME, on PATH or under /usr/lib/jvm; {hint}")
        return list(seen.values())

    # ------------------------------------------------------------------ store line (which Neo4j wrote the store)

    def has_store(self) -> bool:
        return (self.home / "data" / "databases" / "neo4j").is_dir()

    def store_line(self) -> str | None:
        """The line that wrote this home's store; a store from before the marker existed is 5.26."""
        if not self.has_store():
            return None
        try:
            marker = json.loads((self.home / STORE_MARKER).read_text(encoding="utf-8"))
            return str(marker["neo4j_line"])
        except (OSError, ValueError, KeyError, TypeError):
            return "5.26"

    def _write_store_marker(self, line: NeoLine, version: str | None) -> None:
        marker = {"neo4j_line": line.key, "neo4j_version": version}
        (self.home / STORE_MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")

    def _check_store_line(self, line: NeoLine, allow_upgrade: bool) -> None:
        have = self.store_line()
        if have is None or have == line.key:
            return
        if have == "5.26" and line.key == "2026":
            if allow_upgrade:
                return
            raise ServerError(
                f"the store in {self.home} was written by Neo4j 5.26 and Neo4j 2026.x would upgrade it one way; "
                "run `m3graph db upgrade` (it backs the store up first) or keep 5.26 with "
                "M3GRAPH_LOCAL__NEO4J_VERSION=5.26"
            )
        raise ServerError(
            f"the store in {self.home} was written by Neo4j {have}; Neo4j {line.key} cannot open it (stores do not "
            f"downgrade): set M3GRAPH_LOCAL__NEO4J_VERSION={have} or restore a backup (`m3graph db restore`)"
        )

    # ------------------------------------------------------------------ build

    def build(self, force: bool = False) -> Path:
        """Compile the launcher and collect its jars; a no-op when an up-to-date build exists.

        The build stamp hashes the pom and the Java source, so a version bump rebuilds by itself instead of
        leaving two Neo4j versions on the classpath.
        """
        line, java = self.runtime()
        build_dir = self.build_dir
        build_dir.mkdir(parents=True, exist_ok=True)
        with _locked(build_dir / ".build.lock"):
            stamp = self._source_digest()
            if not force and self._build_complete(build_dir, stamp):
                return build_dir
            mvn = self._which(self.settings.local.mvn, "mvn", "install Maven (Debian: apt-get install maven)")
            # copy-dependencies never deletes, so stale jars from an older version must go first.
            for sub in ("lib", "plugins"):
                shutil.rmtree(build_dir / sub, ignore_errors=True)
            (build_dir / "build.stamp").unlink(missing_ok=True)
            log_path = build_dir / "maven.log"
            cmd = [
                mvn,
                "-B",
                "-q",
                "-Dstyle.color=never",
                "-f",
                str(self.launcher_dir / "pom.xml"),
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
                        cwd=self.launcher_dir,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        env=env,
                        check=False,
                    ).returncode
                except OSError as exc:
                    raise ServerError(f"could not run Maven ({mvn}): {exc}") from exc
            if rc != 0:
                raise ServerError(
                    f"Maven failed with exit code {rc} building the launcher in {build_dir}; "
                    f"full log: {log_path}\n{_tail(log_path)}"
                )
            if not self._build_complete(build_dir, None):
                raise ServerError(
                    f"Maven succeeded but {build_dir} lacks m3graph-launcher.jar, lib/ or plugins/ (APOC); "
                    f"full log: {log_path}\n{_tail(log_path)}"
                )
            (build_dir / "build.stamp").write_text(stamp + "\n", encoding="utf-8")
            log.info("launcher built in %.1f s", time.monotonic() - started)
        return build_dir

    def _source_digest(self) -> str:
        pom = self.launcher_dir / "pom.xml"
        if not pom.is_file():
            raise ServerError(f"launcher sources missing: {pom} not found (broken installation of m3graph?)")
        digest = hashlib.sha256(self.line.profile.encode())
        for path in [pom, *sorted((self.launcher_dir / "src").rglob("*.java"))]:
            digest.update(path.relative_to(self.launcher_dir).as_posix().encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()

    def _build_complete(self, build_dir: Path, stamp: str | None) -> bool:
        if not (build_dir / "m3graph-launcher.jar").is_file():
            return False
        if _kernel_version(build_dir / "lib") is None:
            return False
        if self.line.apoc and not any((build_dir / "plugins").glob("apoc-core-*.jar")):
            return False
        if stamp is None:
            return True
        stamp_file = build_dir / "build.stamp"
        return stamp_file.is_file() and stamp_file.read_text(encoding="utf-8").strip() == stamp

    @staticmethod
    def _which(command: str, what: str, hint: str) -> str:
        found = shutil.which(command)
        if found is None:
            raise ServerError(f"{what} not found: {command!r} is not an executable on PATH; {hint}")
        return found

    # ------------------------------------------------------------------ start

    def start(self, wait: bool = True, *, allow_upgrade: bool = False) -> ServerStatus:
        """Start the server, or reuse the one already serving this home.

        Reuse is what lets the CLI, the test session and workers share one server without coordinating.
        `allow_upgrade` is for `m3graph db upgrade` only: it lets 2026.x open (and so upgrade) a 5.26 store.
        """
        home = self.home
        home.mkdir(parents=True, exist_ok=True)
        with _locked(home / ".start.lock"):
            pid = self._find_pid()
            if pid is not None:
                return self._reuse(pid, wait)
            self._clear_state_files()
            line, java = self.runtime()
            self._check_port_free()
            build_dir = self.build_dir
            if not self._build_complete(build_dir, None):
                raise ServerError(f"the launcher is not built in {build_dir}; run `m3graph db build` first")
            self._check_store_line(line, allow_upgrade)
            debug_offset = _size(self.debug_log)
            password_file = self._write_password_file()
            try:
                proc, started = self._spawn(java, build_dir, password_file)
                self.pid_file.write_text(f"{proc.pid}\n", encoding="utf-8")
                if not wait:
                    return self.status()
                try:
                    self._wait_ready(proc.pid, started, proc)
                except ServerError:
                    self._terminate(proc.pid, stall_s=30)
                    self._clear_state_files()
                    raise
            finally:
                if password_file is not None:
                    password_file.unlink(missing_ok=True)  # the launcher deletes it on read; this covers a crash
            elapsed = time.monotonic() - started
            self._write_store_marker(line, _kernel_version(build_dir / "lib"))
            recovered = bool(_RECOVERY.search(_read_from(self.debug_log, debug_offset)))
            if recovered:
                log.warning("Neo4j ran crash recovery on start (the previous stop of %s was not clean)", home)
            status = self._status_for(proc.pid, reused=False, startup_s=elapsed, recovered=recovered)
            if status.simd is None or "API enabled" not in status.simd:
                # Lucene then computes every vector distance in scalar code (5.26's Lucene only vectorizes on 20-22).
                log.warning("Neo4j %s runs without SIMD vector distances: %s", status.neo4j_version, status.simd)
            log.info("Neo4j %s ready at %s (pid %d) after %.1f s", status.neo4j_version, self.bolt_uri, proc.pid,
                     elapsed)
            return status

    def _reuse(self, pid: int, wait: bool) -> ServerStatus:
        args = _cmdline(pid)
        running = (_option(args, "--host"), _option(args, "--port"))
        wanted = (self.settings.local.host, str(self.settings.local.port))
        if args and running != wanted:
            # One home, one store lock: a second server on the new address could never open the database.
            raise ServerError(
                f"the server for {self.home} (pid {pid}) is running on {running[0]}:{running[1]}, not on "
                f"{wanted[0]}:{wanted[1]}; stop it first (`m3graph db stop`) or use its address"
            )
        if not self.pid_file.is_file():  # found by its command line only: adopt it
            self.pid_file.write_text(f"{pid}\n", encoding="utf-8")
        if wait and not (self._ready_pid() == pid and self._bolt_answers(timeout_s=5.0)):
            # Another process started it without waiting; finish that wait rather than start a second one.
            self._wait_ready(pid, time.monotonic(), None)
        return self._status_for(pid, reused=True, startup_s=None)

    def _write_password_file(self) -> Path | None:
        """The initial password for the launcher: 0600, read and deleted by it before the database starts."""
        if not self.settings.local.auth:
            return None
        path = self.home / ".initial-password"
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(self.settings.neo4j_password.get_secret_value())
        return path

    def _spawn(self, java: Java, build_dir: Path, password_file: Path | None) -> tuple[subprocess.Popen[bytes], float]:
        local = self.settings.local
        line = self.line
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
            str(self.home),
            "--host",
            local.host,
            "--port",
            str(local.port),
            "--pagecache-mb",
            str(local.pagecache_mb),
            "--tx-timeout-s",
            str(local.tx_timeout_s),
            "--import-dir",
            str(self.import_dir),
        ]
        if line.apoc:
            cmd += ["--plugins", str(build_dir / "plugins")]
        if password_file is not None:
            cmd += ["--user", self.settings.neo4j_user, "--password-file", str(password_file)]
        else:
            cmd.append("--no-auth")
        for name, value in {**dict(line.settings), **local.neo4j_settings}.items():
            cmd += ["--setting", f"{name}={value}"]
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        if self.log_file.exists():
            self.log_file.replace(self.log_file.with_name(self.log_file.name + ".1"))
        log.info("starting Neo4j %s: %s", line.key, " ".join(cmd))
        with self.log_file.open("wb") as out:
            try:
                proc = subprocess.Popen(
                    cmd,
                    cwd=self.home,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # outlives the CLI and ignores the terminal's Ctrl-C
                    close_fds=True,
                )
            except OSError as exc:
                raise ServerError(f"could not start {java.path}: {exc}") from exc
        return proc, time.monotonic()

    def _wait_ready(self, pid: int, started: float, proc: subprocess.Popen[bytes] | None) -> None:
        """Wait for the ready file, then for Bolt: the file alone can precede the connector accepting logins."""
        deadline = started + self.settings.local.startup_timeout_s
        while True:
            exited = proc.poll() if proc is not None else (None if _alive(pid) else -1)
            if exited is not None:
                raise ServerError(
                    f"Neo4j (pid {pid}) exited with code {exited} during startup; "
                    f"log: {self.log_file}\n{_tail(self.log_file)}"
                )
            if self._ready_pid() == pid and self._bolt_answers(timeout_s=5.0):
                return
            if time.monotonic() > deadline:
                raise ServerError(
                    f"Neo4j (pid {pid}) was not ready at {self.bolt_uri} within "
                    f"{self.settings.local.startup_timeout_s:.0f} s (M3GRAPH_LOCAL__STARTUP_TIMEOUT_S); "
                    f"log: {self.log_file}\n{_tail(self.log_file)}"
                )
            time.sleep(_POLL_S)

    def _bolt_answers(self, timeout_s: float) -> bool:
        auth = (self.settings.neo4j_user, self.settings.neo4j_password.get_secret_value())
        try:
            with GraphDatabase.driver(self.bolt_uri, auth=auth, connection_timeout=timeout_s) as driver:
                driver.verify_connectivity()
        except (DriverError, Neo4jError, OSError):
            return False
        return True

    def _check_port_free(self) -> None:
        host, port = self.settings.local.host, self.settings.local.port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            # SO_REUSEADDR as the JVM sets it, so a socket lingering in TIME_WAIT does not count as taken.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise ServerError(f"cannot bind {host}:{port}: {exc}") from exc
            else:
                return
        if not _listening(host, port):
            # Only TIME_WAIT remnants (e.g. of a killed server on the dual-stack socket): the JVM binds anyway.
            return
        owner = ""
        other = _launcher_on_port(port)
        if other is not None:
            owner = f" by the m3graph server of another home ({other[1]}, pid {other[0]})"
        raise ServerError(
            f"port {port} on {host} is already in use{owner or ' by another process'}, not by the m3graph server "
            f"for {self.home}; stop that process or choose another port (M3GRAPH_LOCAL__PORT)"
        )

    # ------------------------------------------------------------------ stop / status

    def stop(
        self,
        stall_s: float | None = None,
        progress: Callable[[StopProgress], None] | None = None,
    ) -> bool:
        """Stop the server of this home; True when there was one (`last_stop` says how it went).

        SIGTERM runs the launcher's shutdown hook, which checkpoints and closes the store. A large store takes
        minutes for that, so there is no overall deadline: SIGKILL comes only after `stall_s` seconds (default
        local.stop_stall_s) without any sign of progress (CPU time, store files, log), because the next start
        then has to run recovery.
        """
        home = self.home
        if not home.is_dir():
            return False
        with _locked(home / ".start.lock"):
            pid = self._find_pid()
            if pid is None:
                self._clear_state_files()
                return False
            self._terminate(pid, stall_s if stall_s is not None else self.settings.local.stop_stall_s, progress)
            self._clear_state_files()
            return True

    def _terminate(
        self, pid: int, stall_s: float, progress: Callable[[StopProgress], None] | None = None
    ) -> None:
        began = time.monotonic()
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        last_change = sampled = reported = began
        signature = self._progress_signature(pid)
        cpu_mark = _cpu_seconds(pid)
        while _alive(pid):
            now = time.monotonic()
            if now - sampled >= 1.0:
                sampled = now
                current, cpu = self._progress_signature(pid), _cpu_seconds(pid)
                # An idle JVM still ticks a little; 5% of a core is work (a checkpoint flushing pages).
                busy = cpu is not None and cpu_mark is not None and cpu - cpu_mark >= 0.05
                if current != signature or busy:
                    last_change = now
                signature, cpu_mark = current, cpu
            if progress is not None and now - reported >= 2.0:
                reported = now
                progress(StopProgress(pid, now - began, now - last_change, _cpu_seconds(pid),
                                      _last_line(self.log_file)))
            if now - last_change > stall_s:
                log.warning("Neo4j (pid %d) made no shutdown progress for %.0f s; killing it (the next start "
                            "recovers)", pid, stall_s)
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                if not _wait_exit(pid, 15):
                    raise ServerError(f"Neo4j (pid {pid}) survived SIGKILL; it may be stuck in the kernel")
                self.last_stop = StopReport(pid, time.monotonic() - began, clean=False)
                return
            time.sleep(_POLL_S)
        self.last_stop = StopReport(pid, time.monotonic() - began, clean=True)

    def _progress_signature(self, pid: int) -> tuple[int, ...]:
        """Sizes and mtimes of the store files and the logs: a checkpoint or a closing index changes them."""
        items: list[int] = []
        for path in (self.log_file, self.debug_log):
            with suppress(OSError):
                st = path.stat()
                items += [st.st_size, st.st_mtime_ns]
        for root, _dirs, files in os.walk(self.home / "data"):
            for name in files:
                with suppress(OSError):
                    st = os.stat(os.path.join(root, name))
                    items += [st.st_size, st.st_mtime_ns]
        return tuple(items)

    def status(self) -> ServerStatus:
        """Report without side effects: status must be safe to call from anywhere, any number of times."""
        pid = self._find_pid() if self.home.is_dir() else None
        if pid is None:
            return ServerStatus(running=False, pid=None, bolt_uri=self.bolt_uri, home=self.home)
        return self._status_for(pid, reused=False, startup_s=None)

    def _status_for(
        self, pid: int, reused: bool, startup_s: float | None, recovered: bool | None = None
    ) -> ServerStatus:
        ready = self._ready_fields()
        return ServerStatus(
            running=True,
            pid=pid,
            bolt_uri=self.bolt_uri,
            home=self.home,
            rss_mb=_rss_mb(pid),
            reused=reused,
            startup_s=startup_s,
            ready=self._ready_pid() == pid,
            neo4j_version=_running_version(pid),
            simd=ready.get("simd"),
            auth=None if "auth" not in ready else ready["auth"] == "true",
            recovered=recovered,
        )

    def _ready_fields(self) -> dict[str, str]:
        try:
            text = self.ready_file.read_text(encoding="utf-8")
        except OSError:
            return {}
        fields = dict(re.findall(r"(?:^|\s)(pid|auth)=(\S+)", text))
        if (simd := re.search(r"^simd=(.*)$", text, re.M)) is not None:
            fields["simd"] = simd.group(1).strip()
        return fields

    # ------------------------------------------------------------------ process discovery

    def _find_pid(self) -> int | None:
        """The live launcher serving this home, from the pid file or, failing that, from the process table.

        The command-line check guards against a recycled pid: a stale file must never make us signal a stranger.
        """
        try:
            pid = int(self.pid_file.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            pid = None
        if pid is not None and _alive(pid) and _launcher_home(pid) == self.home:
            return pid
        for other_pid, other_home in _launchers():
            if other_home == self.home and _alive(other_pid):
                return other_pid
        return None

    def _ready_pid(self) -> int | None:
        try:
            text = self.ready_file.read_text(encoding="utf-8")
        except OSError:
            return None
        match = re.search(r"pid=(\d+)", text)
        return int(match.group(1)) if match else None

    def _clear_state_files(self) -> None:
        self.pid_file.unlink(missing_ok=True)
        self.ready_file.unlink(missing_ok=True)


def ensure_server(settings: Settings) -> ServerStatus | None:
    """Make a local server available when the settings call for one; an external NEO4J_URI is never touched."""
    if not settings.uses_local_server:
        return None
    server = LocalNeo4j(settings)
    server.build()
    return server.start()


# ---------------------------------------------------------------------- helpers


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise build/start/stop across processes: two test sessions must not race for one home."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(_ANSI.sub("", line) for line in text.splitlines()[-lines:])


def _alive(pid: int) -> bool:
    """True for a running process; a zombie counts as dead (and is reaped when it is our child)."""
    with suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs: trust kill(0)
    if stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X"):
        return True
    # A killed JVM's main thread turns zombie while its other threads still tear down (and hold the port).
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def _java_major(java: str) -> int | None:
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


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning("%s", message)


def _kernel_version(lib: Path) -> str | None:
    """The Neo4j version of a build, from its kernel jar (neo4j-<version>.jar)."""
    for jar in lib.glob("neo4j-*.jar"):
        match = re.fullmatch(r"neo4j-(\d[\w.]*)\.jar", jar.name)
        if match:
            return match.group(1)
    return None


def _running_version(pid: int) -> str | None:
    classpath = _option(_cmdline(pid), "-cp") or ""
    for entry in classpath.split(os.pathsep):
        if entry.endswith("m3graph-launcher.jar"):
            return _kernel_version(Path(entry).parent / "lib")
    return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_from(path: Path, offset: int) -> str:
    """What a log gained since `offset` (all of it when it was rotated meanwhile)."""
    try:
        with path.open("rb") as handle:
            if _size(path) >= offset:
                handle.seek(offset)
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _last_line(path: Path) -> str:
    lines = _tail(path, lines=1).strip().splitlines()
    return lines[-1] if lines else ""


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _wait_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL_S)
    return True


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _option(args: list[str], name: str) -> str | None:
    for index, arg in enumerate(args[:-1]):
        if arg == name:
            return args[index + 1]
    return None


def _launcher_home(pid: int) -> Path | None:
    args = _cmdline(pid)
    if LAUNCHER_MAIN not in args:
        return None
    home = _option(args, "--home")
    if not home:
        return None
    path = Path(home)
    if not path.is_absolute():  # started by hand with a relative home: resolve against that process's cwd
        with suppress(OSError):
            path = Path(f"/proc/{pid}/cwd").readlink() / path
    return path.resolve()


def _launchers() -> Iterator[tuple[int, Path]]:
    proc = Path("/proc")
    if not proc.is_dir():
        return
    for entry in proc.iterdir():
        if entry.name.isdigit():
            home = _launcher_home(int(entry.name))
            if home is not None:
                yield int(entry.name), home


def _launcher_on_port(port: int) -> tuple[int, Path] | None:
    for pid, home in _launchers():
        if _option(_cmdline(pid), "--port") == str(port):
            return pid, home
    return None


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2.0):
            return True
    except OSError:
        return False


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
