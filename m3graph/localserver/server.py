"""Build, start and stop the embedded Neo4j that m3graph uses when no `NEO4J_URI` is given.

The server is a small Java launcher (``launcher/``) around Neo4j Community, so a laptop or CI machine needs only a
JDK and Maven, not Docker or a server tarball. The Python side owns the process: the pid file and the ``ready``
file in the server home are the only shared state, so any m3graph process (CLI, test session, worker) can find,
reuse or stop a server that another one started.

Why this module is over 400 lines: `LocalNeo4j` is the one object per server home, and start, stop and status
share its state (paths, the start lock, pid discovery, the ready file) and must agree on it; what needs none of
that lives beside it: the Neo4j line and JVM (`runtime`), the Maven build (`build`), SIGTERM-then-wait
(`shutdown`), the process table (`processes`) and log/lock helpers (`files`).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from neo4j import GraphDatabase
from neo4j.exceptions import DriverError, Neo4jError

from m3graph.errors import ServerError
from m3graph.file_locks import exclusive as locked
from m3graph.localserver import build as launcher_build
from m3graph.localserver import runtime, shutdown
from m3graph.localserver.files import read_from, size, tail
from m3graph.localserver.processes import (
    POLL_S,
    alive,
    cmdline,
    launcher_home,
    launcher_on_port,
    launchers,
    listening,
    option,
    rss_mb,
)
from m3graph.localserver.runtime import Java, NeoLine
from m3graph.localserver.shutdown import StopProgress, StopReport
from m3graph.settings import Settings

log = logging.getLogger(__name__)

STORE_MARKER = "m3graph-store.json"
# Lines in the launcher log / debug.log that say something about a start.
_RECOVERY = re.compile(r"Recovery in '\w+' mode completed|Recovery completed|recovery required", re.I)


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
        return launcher_build.LAUNCHER_DIR

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
        """The Neo4j line and the JVM that runs it, chosen once per instance (`runtime.choose`)."""
        if self._runtime is None:
            self._runtime = runtime.choose(self.settings.local, self.store_line(), self.home)
        return self._runtime

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
        """Compile the launcher and collect its jars; a no-op when an up-to-date build exists."""
        line, java = self.runtime()
        return launcher_build.build(self.build_dir, line, java, self.settings.local.mvn, force=force,
                                    launcher_dir=self.launcher_dir)

    def _build_complete(self, build_dir: Path, stamp: str | None) -> bool:
        return launcher_build.build_complete(build_dir, self.line, stamp)

    # ------------------------------------------------------------------ start

    def start(self, wait: bool = True, *, allow_upgrade: bool = False) -> ServerStatus:
        """Start the server, or reuse the one already serving this home.

        Reuse is what lets the CLI, the test session and workers share one server without coordinating.
        `allow_upgrade` is for `m3graph db upgrade` only: it lets 2026.x open (and so upgrade) a 5.26 store.
        """
        home = self.home
        home.mkdir(parents=True, exist_ok=True)
        with locked(home / ".start.lock"):
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
            debug_offset = size(self.debug_log)
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
            self._write_store_marker(line, launcher_build.kernel_version(build_dir / "lib"))
            recovered = bool(_RECOVERY.search(read_from(self.debug_log, debug_offset)))
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
        args = cmdline(pid)
        running = (option(args, "--host"), option(args, "--port"))
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
        line = self.line
        user = self.settings.neo4j_user if password_file is not None else None
        cmd = runtime.launcher_command(java, line, build_dir, self.settings.local, self.home, self.import_dir,
                                       user, password_file)
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
            exited = proc.poll() if proc is not None else (None if alive(pid) else -1)
            if exited is not None:
                raise ServerError(
                    f"Neo4j (pid {pid}) exited with code {exited} during startup; "
                    f"log: {self.log_file}\n{tail(self.log_file)}"
                )
            if self._ready_pid() == pid and self._bolt_answers(timeout_s=5.0):
                return
            if time.monotonic() > deadline:
                raise ServerError(
                    f"Neo4j (pid {pid}) was not ready at {self.bolt_uri} within "
                    f"{self.settings.local.startup_timeout_s:.0f} s (M3GRAPH_LOCAL__STARTUP_TIMEOUT_S); "
                    f"log: {self.log_file}\n{tail(self.log_file)}"
                )
            time.sleep(POLL_S)

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
        if not listening(host, port):
            # Only TIME_WAIT remnants (e.g. of a killed server on the dual-stack socket): the JVM binds anyway.
            return
        owner = ""
        other = launcher_on_port(port)
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
        with locked(home / ".start.lock"):
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
        self.last_stop = shutdown.terminate(pid, stall_s, self.log_file, [self.log_file, self.debug_log],
                                            self.home / "data", progress)

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
            rss_mb=rss_mb(pid),
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
        if pid is not None and alive(pid) and launcher_home(pid) == self.home:
            return pid
        for other_pid, other_home in launchers():
            if other_home == self.home and alive(other_pid):
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


def _running_version(pid: int) -> str | None:
    classpath = option(cmdline(pid), "-cp") or ""
    for entry in classpath.split(os.pathsep):
        if entry.endswith("m3graph-launcher.jar"):
            return launcher_build.kernel_version(Path(entry).parent / "lib")
    return None
