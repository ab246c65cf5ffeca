"""Build, start and stop the embedded Neo4j that m3graph uses when no `NEO4J_URI` is given.

The server is a small Java launcher (``launcher/``) around Neo4j Community, so a laptop or CI machine needs only a
JDK and Maven, not Docker or a server tarball. The Python side owns the process: the pid file and the ``ready``
file in the server home are the only shared state, so any m3graph process (CLI, test session, worker) can find,
reuse or stop a server that another one started.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from neo4j import GraphDatabase
from neo4j.exceptions import DriverError, Neo4jError

from m3graph.errors import ServerError
from m3graph.settings import Settings

log = logging.getLogger(__name__)

LAUNCHER_MAIN = "org.m3graph.launcher.Main"
MIN_JAVA = 17
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_POLL_S = 0.2


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


class LocalNeo4j:
    """One local server, identified by its home directory."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    # ------------------------------------------------------------------ paths

    @property
    def home(self) -> Path:
        # Absolute, because the launcher records it in its command line and the pid check compares against it.
        return self.settings.local.home.expanduser().resolve()

    @property
    def build_dir(self) -> Path:
        configured = self.settings.local.build_dir
        if configured is not None:
            return configured.expanduser().resolve()
        return (self.home.parent / "launcher-build").resolve()

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
    def bolt_uri(self) -> str:
        # The local address, not settings.bolt_uri: with NEO4J_URI set that points at another server.
        host = self.settings.local.host
        host = f"[{host}]" if ":" in host else host
        return f"bolt://{host}:{self.settings.local.port}"

    # ------------------------------------------------------------------ build

    def build(self, force: bool = False) -> Path:
        """Compile the launcher and collect its jars; a no-op when an up-to-date build exists.

        The build stamp hashes the pom and the Java source, so a version bump rebuilds by itself instead of
        leaving two Neo4j versions on the classpath.
        """
        java = self._check_java()
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
                f"-DbuildDir={build_dir}",
            ]
            env = dict(os.environ)
            env.setdefault("JAVA_HOME", str(Path(java).resolve().parent.parent))
            log.info("building the Neo4j launcher in %s (first run downloads ~150 MB of jars)", build_dir)
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
        digest = hashlib.sha256()
        for path in [pom, *sorted((self.launcher_dir / "src").rglob("*.java"))]:
            digest.update(path.relative_to(self.launcher_dir).as_posix().encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()

    @staticmethod
    def _build_complete(build_dir: Path, stamp: str | None) -> bool:
        if not (build_dir / "m3graph-launcher.jar").is_file():
            return False
        if not any((build_dir / "lib").glob("neo4j-*.jar")):
            return False
        if not any((build_dir / "plugins").glob("apoc-core-*.jar")):
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

    def _check_java(self) -> str:
        """Fail early and by name: a JVM that is missing or too old otherwise shows up as a cryptic stack trace."""
        java = self._which(
            self.settings.local.java,
            "java",
            f"install a JDK {MIN_JAVA}+ (Debian: apt-get install openjdk-17-jdk-headless) or set M3GRAPH_LOCAL__JAVA",
        )
        try:
            proc = subprocess.run(
                [java, "-version"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ServerError(f"could not run {java} -version: {exc}") from exc
        text = proc.stderr + proc.stdout
        match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
        if proc.returncode != 0 or match is None:
            raise ServerError(f"could not determine the Java version of {java}:\n{text.strip()[-2000:]}")
        major = int(match.group(1))
        if major == 1 and match.group(2):  # "1.8.0_392" style
            major = int(match.group(2))
        if major < MIN_JAVA:
            raise ServerError(
                f"{java} is Java {major}; Neo4j 5 needs Java {MIN_JAVA} or newer "
                "(set M3GRAPH_LOCAL__JAVA to a newer java)"
            )
        return java

    # ------------------------------------------------------------------ start

    def start(self, wait: bool = True) -> ServerStatus:
        """Start the server, or reuse the one already serving this home.

        Reuse is what lets the CLI, the test session and workers share one server without coordinating.
        """
        home = self.home
        home.mkdir(parents=True, exist_ok=True)
        with _locked(home / ".start.lock"):
            pid = self._find_pid()
            if pid is not None:
                return self._reuse(pid, wait)
            self._clear_state_files()
            java = self._check_java()
            self._check_port_free()
            build_dir = self.build_dir
            if not self._build_complete(build_dir, None):
                raise ServerError(f"the launcher is not built in {build_dir}; run `m3graph db build` first")
            proc, started = self._spawn(java, build_dir)
            self.pid_file.write_text(f"{proc.pid}\n", encoding="utf-8")
            if not wait:
                return self.status()
            try:
                self._wait_ready(proc.pid, started, proc)
            except ServerError:
                self._terminate(proc.pid, timeout=30)
                self._clear_state_files()
                raise
            elapsed = time.monotonic() - started
            log.info("Neo4j ready at %s (pid %d) after %.1f s", self.bolt_uri, proc.pid, elapsed)
            return self._status_for(proc.pid, reused=False, startup_s=elapsed)

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

    def _spawn(self, java: str, build_dir: Path) -> tuple[subprocess.Popen[bytes], float]:
        local = self.settings.local
        classpath = os.pathsep.join(
            [str(build_dir / "m3graph-launcher.jar"), str(build_dir / "lib" / "*"), str(build_dir / "plugins" / "*")]
        )
        cmd = [
            java,
            f"-Xmx{local.heap_mb}m",
            "-XX:+ExitOnOutOfMemoryError",  # a half-dead JVM holding the store lock is worse than a clean exit
            "-cp",
            classpath,
            LAUNCHER_MAIN,
            "--home",
            str(self.home),
            "--plugins",
            str(build_dir / "plugins"),
            "--host",
            local.host,
            "--port",
            str(local.port),
            "--pagecache-mb",
            str(local.pagecache_mb),
            "--tx-timeout-s",
            str(local.tx_timeout_s),
        ]
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        if self.log_file.exists():
            self.log_file.replace(self.log_file.with_name(self.log_file.name + ".1"))
        log.info("starting Neo4j: %s", " ".join(cmd))
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
                raise ServerError(f"could not start {java}: {exc}") from exc
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
        owner = ""
        other = _launcher_on_port(port)
        if other is not None:
            owner = f" by the m3graph server of another home ({other[1]}, pid {other[0]})"
        raise ServerError(
            f"port {port} on {host} is already in use{owner or ' by another process'}, not by the m3graph server "
            f"for {self.home}; stop that process or choose another port (M3GRAPH_LOCAL__PORT)"
        )

    # ------------------------------------------------------------------ stop / status

    def stop(self, timeout: float = 300) -> bool:
        """Stop the server of this home; True when there was one.

        SIGTERM runs the launcher's shutdown hook, which flushes and closes the store; SIGKILL is only the last
        resort because the next start then has to run recovery.
        """
        home = self.home
        if not home.is_dir():
            return False
        with _locked(home / ".start.lock"):
            pid = self._find_pid()
            if pid is None:
                self._clear_state_files()
                return False
            self._terminate(pid, timeout)
            self._clear_state_files()
            return True

    def _terminate(self, pid: int, timeout: float) -> None:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if _wait_exit(pid, timeout):
            return
        log.warning("Neo4j (pid %d) ignored SIGTERM for %.0f s; killing it", pid, timeout)
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if not _wait_exit(pid, 15):
            raise ServerError(f"Neo4j (pid {pid}) survived SIGKILL; it may be stuck in the kernel")

    def status(self) -> ServerStatus:
        """Report without side effects: status must be safe to call from anywhere, any number of times."""
        pid = self._find_pid() if self.home.is_dir() else None
        if pid is None:
            return ServerStatus(running=False, pid=None, bolt_uri=self.bolt_uri, home=self.home)
        return self._status_for(pid, reused=False, startup_s=None)

    def _status_for(self, pid: int, reused: bool, startup_s: float | None) -> ServerStatus:
        return ServerStatus(
            running=True,
            pid=pid,
            bolt_uri=self.bolt_uri,
            home=self.home,
            rss_mb=_rss_mb(pid),
            reused=reused,
            startup_s=startup_s,
            ready=self._ready_pid() == pid,
        )

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
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


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


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
