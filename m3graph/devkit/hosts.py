"""Simulated hosts on one machine: Linux network namespaces joined by a bridge, for multi-host fault trials.

Why: m3graph's workers are meant to run on many machines sharing only Redis, Neo4j and an object store, and a
partition, a lost host or a host added mid-ingest can only be tried for real with separate network stacks. A
network namespace is one (the mechanism container runtimes use); this module makes a few of them, runs the
services in them and removes everything it made, whatever happens.

Layout (every name starts with ``m3h-<tag>``; ``<tag>`` is 4 hex digits per harness, so two never collide):

- a ``net`` namespace holding a Linux bridge ``br0``: the "switch". Each host namespace has one veth pair whose
  ``eth0`` end is in the host and whose ``v-<host>`` end is on the bridge, all in one private subnet
  (`SUBNET`.0/24) owned by the harness. No link, address or route is added to the root namespace and nothing is
  routed anywhere (the machine's ip_forward and firewall are untouched): traffic goes only to loopback and to
  the harness's own addresses;
- hosts: ``ctl`` (the campaign's own checks and submissions, `enter()`), ``graph`` (Redis and Neo4j), ``store``
  (the S3-compatible server, moto), ``w1``, ``w2``, ... (one `m3graph worker` each, with its own data directory);
- cutting a host off = ``ip link set down`` on its bridge port (`cut`); `restore` brings it back.

Cleanup: `Hosts.cleanup()` kills every process in its namespaces (``ip netns pids``: the JVM a launcher started
and Celery's children included), deletes the namespaces (their veths go with them) and removes its work
directory (a ``m3h-*`` temporary directory holding homes, data directories, logs and ``state.json``). It runs
on `close()`, at interpreter exit and on SIGTERM/SIGINT/SIGHUP. A harness killed by SIGKILL cannot run code:
the next harness's start, or ``python -m m3graph.devkit.hosts cleanup``, removes every harness whose owner
process is gone (``cleanup --all``: every ``m3h-`` namespace and directory, owner alive or not).

Needs root and ``ip`` (iproute2); `require_root_netns` says clearly why it cannot run otherwise.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from m3graph.localserver.processes import alive

log = logging.getLogger(__name__)

PREFIX = "m3h-"
SUBNET = "10.231.77"  # a /24 of the harness's own, only inside its namespaces
ADDRESSES = {"ctl": 1, "graph": 2, "store": 3, "w1": 11, "w2": 12, "w3": 13, "w4": 14}
_CLONE_NEWNET = 0x40000000
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class HostsUnavailableError(RuntimeError):
    """The machine cannot run the harness (not root, no iproute2, no network namespaces)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {proc.stderr.strip()}")
    return proc


def require_root_netns() -> None:
    """Raises HostsUnavailableError with the reason when namespaces cannot be made here."""
    if os.geteuid() != 0:
        raise HostsUnavailableError("the multi-host harness needs root (ip netns add); run it as root")
    if shutil.which("ip") is None:
        raise HostsUnavailableError("the multi-host harness needs iproute2's `ip`")
    probe = f"{PREFIX}probe-{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        raise HostsUnavailableError(f"`ip netns add` failed: {made.stderr.strip()}")
    _ip("netns", "del", probe, check=False)


def namespaces() -> list[str]:
    """The harness namespaces that exist now (any tag)."""
    out = _ip("netns", "list", check=False).stdout
    return sorted(name for line in out.splitlines() if (name := line.split()[0] if line.split() else "")
                  .startswith(PREFIX))


def namespace_pids(ns: str) -> list[int]:
    out = _ip("netns", "pids", ns, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def _kill_namespace(ns: str) -> None:
    """SIGKILL every process in `ns` (repeated: a dying parent may still fork), then delete it."""
    for _ in range(20):
        pids = [p for p in namespace_pids(ns) if p != os.getpid()]  # this process may have entered it
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    _ip("netns", "del", ns, check=False)


def cleanup_stale(everything: bool = False) -> list[str]:
    """Removes every harness whose owner process is gone (`everything`: every harness, and any ``m3h-``
    namespace no state file claims). Returns what was removed."""
    removed: list[str] = []
    claimed: set[str] = set()
    for state_file in Path(tempfile.gettempdir()).glob(f"{PREFIX}*/state.json"):
        try:
            state = json.loads(state_file.read_text())
        except (OSError, ValueError):
            continue
        owned = [str(n) for n in state.get("namespaces", [])]
        owner = int(state.get("owner", 0))
        if not everything and (owner <= 0 or alive(owner)):  # no owner recorded: never take it for dead
            claimed.update(owned)
            continue
        for ns in owned:
            _kill_namespace(ns)
            removed.append(ns)
        shutil.rmtree(state_file.parent, ignore_errors=True)
        removed.append(str(state_file.parent))
    for ns in namespaces():  # a namespace no live harness claims (its directory is gone, or it was a probe)
        if ns not in claimed:
            _kill_namespace(ns)
            removed.append(ns)
    return removed


def _setns(fd: int, what: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns({what}): {os.strerror(err)}")


def enter(ns: str) -> None:
    """Moves the calling thread (call it on the main thread before any other starts: threads inherit it) into
    namespace `ns`, so this process's sockets are those of that host. Python 3.11 has no os.setns.

    There is no way back on purpose: when the harness deletes the namespace the process stays in it, cut off
    (its link went with the bridge), so a late connection (a Celery result unsubscribing at exit) fails there
    instead of leaving through the machine's own default route to whatever holds the harness's addresses."""
    fd = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
    try:
        _setns(fd, ns)
    finally:
        os.close(fd)


def _inherited() -> dict[str, str]:
    """This process's environment, handed to a child unread (as Popen's env=None would)."""
    return dict(os.environ)  # noqa: TID251 - passed through to a child, not read as configuration


@dataclass
class Proc:
    host: str
    name: str
    popen: subprocess.Popen[bytes]
    log: Path


@dataclass
class Hosts:
    """One harness: its namespaces, processes and work directory. Use as a context manager (or call `close`)."""

    tag: str = field(default_factory=lambda: secrets.token_hex(2))
    keep_logs: Path | None = None  # copy the logs here before the work directory is removed
    work: Path = field(init=False)
    hosts: list[str] = field(default_factory=list)
    procs: list[Proc] = field(default_factory=list)
    _closed: bool = False

    def __post_init__(self) -> None:
        require_root_netns()
        cleanup_stale()
        self.work = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{self.tag}-"))
        self._previous: dict[int, object] = {}
        atexit.register(self.close)
        for sig in _SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_signal)
        self._save_state()
        _ip("netns", "add", self.ns("net"))
        self._save_state()
        _ip("-n", self.ns("net"), "link", "set", "lo", "up")
        _ip("-n", self.ns("net"), "link", "add", "br0", "type", "bridge")
        _ip("-n", self.ns("net"), "link", "set", "br0", "up")

    # ------------------------------------------------------------------ names and state

    def ns(self, host: str) -> str:
        return f"{PREFIX}{self.tag}-{host}"

    @staticmethod
    def address(host: str) -> str:
        return f"{SUBNET}.{ADDRESSES[host]}"

    def _save_state(self) -> None:
        names = [self.ns("net"), *(self.ns(h) for h in self.hosts)]
        state = {"owner": os.getpid(), "tag": self.tag, "namespaces": names,
                 "pids": [p.popen.pid for p in self.procs]}
        tmp = self.work / "state.json.tmp"
        tmp.write_text(json.dumps(state))
        tmp.replace(self.work / "state.json")

    # ------------------------------------------------------------------ hosts and links

    def add_host(self, host: str) -> str:
        """A namespace for `host` with its address on the bridge; returns the address."""
        if host not in ADDRESSES:
            raise ValueError(f"unknown host {host!r}; one of {sorted(ADDRESSES)}")
        ns, net = self.ns(host), self.ns("net")
        self.hosts.append(host)
        self._save_state()  # before it exists: a kill in between still finds it
        _ip("netns", "add", ns)
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", net, "link", "add", f"v-{host}", "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("-n", net, "link", "set", f"v-{host}", "master", "br0", "up")
        _ip("-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        return self.address(host)

    def cut(self, host: str) -> None:
        """Unplugs `host`'s cable: its bridge port goes down, packets to and from it are dropped."""
        _ip("-n", self.ns("net"), "link", "set", f"v-{host}", "down")

    def restore(self, host: str) -> None:
        _ip("-n", self.ns("net"), "link", "set", f"v-{host}", "up")

    # ------------------------------------------------------------------ processes

    def spawn(self, host: str, name: str, cmd: list[str], env: dict[str, str] | None = None,
              cwd: Path | None = None) -> Proc:
        """Runs `cmd` in `host`'s namespace with its own UTS name (the hostname Celery names its node by)."""
        logfile = self.work / "logs" / f"{host}-{name}.log"
        logfile.parent.mkdir(parents=True, exist_ok=True)
        full = ["ip", "netns", "exec", self.ns(host), "unshare", "--uts", "--", "sh", "-c",
                'hostname "$0" && exec "$@"', f"{host}.m3h", *cmd]
        # every process carries the harness's work directory: a leftover would be found by it in /proc
        env = {**(_inherited() if env is None else env), "M3H_HARNESS": str(self.work)}
        with logfile.open("ab") as out:
            popen = subprocess.Popen(full, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        proc = Proc(host, name, popen, logfile)
        self.procs.append(proc)
        self._save_state()
        return proc

    def run(self, host: str, cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout_s: float = 300.0) -> subprocess.CompletedProcess[str]:
        """Runs `cmd` to completion in `host`'s namespace (e.g. `m3graph db start`, which leaves the server)."""
        env = {**(_inherited() if env is None else env), "M3H_HARNESS": str(self.work)}
        return subprocess.run(["ip", "netns", "exec", self.ns(host), *cmd], env=env, cwd=cwd, capture_output=True,
                              text=True, timeout=timeout_s)

    def stop(self, proc: Proc, timeout_s: float = 30.0) -> None:
        """SIGTERM to the process group, SIGKILL after `timeout_s`."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.popen.pid, signal.SIGTERM)
        try:
            proc.popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.popen.pid, signal.SIGKILL)
            proc.popen.wait(10)
        self.procs = [p for p in self.procs if p is not proc]
        self._save_state()

    def kill(self, proc: Proc) -> None:
        """SIGKILL of one process group (a crash, not a shutdown)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.popen.pid, signal.SIGKILL)
        proc.popen.wait(10)
        self.procs = [p for p in self.procs if p is not proc]
        self._save_state()

    def kill_host(self, host: str) -> int:
        """SIGKILL of every process on `host` (a machine losing power); returns how many were killed."""
        pids = namespace_pids(self.ns(host))
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for p in self.procs:
            if p.host == host:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.popen.wait(10)
        self.procs = [p for p in self.procs if p.host != host]
        self._save_state()
        return len(pids)

    def remove_host(self, host: str) -> None:
        self.kill_host(host)
        _kill_namespace(self.ns(host))
        self.hosts.remove(host)
        self._save_state()

    # ------------------------------------------------------------------ cleanup

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.close()
        previous = self._previous.get(signum)
        if callable(previous):
            previous(signum, frame)
        raise SystemExit(128 + signum)

    def close(self) -> None:
        """Removes every process, namespace and file this harness made (idempotent; safe at any point)."""
        if self._closed:
            return
        self._closed = True
        for p in list(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.popen.pid, signal.SIGKILL)
        for host in [*self.hosts, "net"]:
            _kill_namespace(self.ns(host))
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.popen.wait(10)
        if self.keep_logs is not None and (self.work / "logs").is_dir():
            self.keep_logs.mkdir(parents=True, exist_ok=True)
            shutil.copytree(self.work / "logs", self.keep_logs, dirs_exist_ok=True)
        shutil.rmtree(self.work, ignore_errors=True)
        with contextlib.suppress(ValueError):
            atexit.unregister(self.close)
        for sig, previous in self._previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, previous)  # type: ignore[arg-type]

    def __enter__(self) -> Hosts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def leftovers(tag: str | None = None) -> dict[str, list[str]]:
    """What of harness `tag` (any harness when None) still exists: namespaces, root-namespace links, work
    directories. Empty lists when it cleaned up."""
    pattern = f"{PREFIX}{tag}-" if tag else PREFIX
    names = [line.split(":")[1].strip().split("@")[0] for line in
             _ip("-o", "link", "show", check=False).stdout.splitlines() if line.count(":") >= 2]
    links = [n for n in names if n.startswith((PREFIX, "v-")) or n == "br0"]
    return {"namespaces": [n for n in namespaces() if n.startswith(pattern)],
            "links": links,
            "dirs": sorted(str(p) for p in Path(tempfile.gettempdir()).glob(f"{pattern}*"))}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["cleanup"]:
        removed = cleanup_stale(everything="--all" in args)
        print("\n".join(f"removed {r}" for r in removed) or "nothing to remove")
        return 0
    if args[:1] == ["list"]:
        print(json.dumps(leftovers(), indent=2))
        return 0
    print("usage: python -m m3graph.devkit.hosts cleanup [--all] | list", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
