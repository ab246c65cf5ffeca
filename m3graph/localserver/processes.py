"""What the process table says about launchers: liveness, command lines, ports, memory and CPU of a pid.

The pid file and the launcher's command line (`--home`, `--host`, `--port`) are the only state that processes
share, so every question "is a server for this home running, and which one?" is answered from /proc here.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

LAUNCHER_MAIN = "org.m3graph.launcher.Main"
POLL_S = 0.2


def alive(pid: int) -> bool:
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


def wait_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True


def cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def option(args: list[str], name: str) -> str | None:
    for index, arg in enumerate(args[:-1]):
        if arg == name:
            return args[index + 1]
    return None


def launcher_home(pid: int) -> Path | None:
    args = cmdline(pid)
    if LAUNCHER_MAIN not in args:
        return None
    home = option(args, "--home")
    if not home:
        return None
    path = Path(home)
    if not path.is_absolute():  # started by hand with a relative home: resolve against that process's cwd
        with suppress(OSError):
            path = Path(f"/proc/{pid}/cwd").readlink() / path
    return path.resolve()


def launchers() -> Iterator[tuple[int, Path]]:
    proc = Path("/proc")
    if not proc.is_dir():
        return
    for entry in proc.iterdir():
        if entry.name.isdigit():
            home = launcher_home(int(entry.name))
            if home is not None:
                yield int(entry.name), home


def launcher_on_port(port: int) -> tuple[int, Path] | None:
    for pid, home in launchers():
        if option(cmdline(pid), "--port") == str(port):
            return pid, home
    return None


def listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2.0):
            return True
    except OSError:
        return False
