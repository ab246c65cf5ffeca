"""Stopping a launcher: SIGTERM, then patience while it shows progress, SIGKILL only after it stalls.

SIGTERM runs the launcher's shutdown hook, which checkpoints and closes the store; a large store takes minutes
for that, so there is no overall deadline. Progress is any change of CPU time, store files or logs.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from m3graph.errors import ServerError
from m3graph.localserver.files import last_line
from m3graph.localserver.processes import POLL_S, alive, cpu_seconds, wait_exit

log = logging.getLogger(__name__)


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


def terminate(
    pid: int,
    stall_s: float,
    log_file: Path,
    watched: list[Path],
    data_dir: Path,
    progress: Callable[[StopProgress], None] | None = None,
) -> StopReport:
    """SIGTERM `pid` and wait for it; SIGKILL after `stall_s` seconds without progress."""
    began = time.monotonic()
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    last_change = sampled = reported = began
    signature = _progress_signature(watched, data_dir)
    cpu_mark = cpu_seconds(pid)
    while alive(pid):
        now = time.monotonic()
        if now - sampled >= 1.0:
            sampled = now
            current, cpu = _progress_signature(watched, data_dir), cpu_seconds(pid)
            # An idle JVM still ticks a little; 5% of a core is work (a checkpoint flushing pages).
            busy = cpu is not None and cpu_mark is not None and cpu - cpu_mark >= 0.05
            if current != signature or busy:
                last_change = now
            signature, cpu_mark = current, cpu
        if progress is not None and now - reported >= 2.0:
            reported = now
            progress(StopProgress(pid, now - began, now - last_change, cpu_seconds(pid), last_line(log_file)))
        if now - last_change > stall_s:
            log.warning("Neo4j (pid %d) made no shutdown progress for %.0f s; killing it (the next start "
                        "recovers)", pid, stall_s)
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            if not wait_exit(pid, 15):
                raise ServerError(f"Neo4j (pid {pid}) survived SIGKILL; it may be stuck in the kernel")
            return StopReport(pid, time.monotonic() - began, clean=False)
        time.sleep(POLL_S)
    return StopReport(pid, time.monotonic() - began, clean=True)


def _progress_signature(watched: list[Path], data_dir: Path) -> tuple[int, ...]:
    """Sizes and mtimes of the store files and the logs: a checkpoint or a closing index changes them."""
    items: list[int] = []
    for path in watched:
        with suppress(OSError):
            st = path.stat()
            items += [st.st_size, st.st_mtime_ns]
    for root, _dirs, files in os.walk(data_dir):
        for name in files:
            with suppress(OSError):
                st = os.stat(os.path.join(root, name))
                items += [st.st_size, st.st_mtime_ns]
    return tuple(items)
