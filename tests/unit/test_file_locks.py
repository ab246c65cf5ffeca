"""The one cross-process lock: a second process waits for the first, says it waited, and the lock file stays."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from m3graph.file_locks import exclusive

HOLDER = """
import sys, time
from pathlib import Path
from m3graph.file_locks import exclusive
with exclusive(Path(sys.argv[1])):
    Path(sys.argv[2]).write_text("held")
    time.sleep(1.5)
"""


def test_a_second_process_waits_until_the_first_releases(tmp_path: Path) -> None:
    lock, held = tmp_path / "sub" / "clip.lock", tmp_path / "held"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(held)])
    try:
        deadline = time.monotonic() + 30
        while not held.exists():
            assert time.monotonic() < deadline, "the holder never took the lock"
            time.sleep(0.05)
        events: list[str] = []
        waited: list[float] = []
        with exclusive(lock, on_wait=lambda: events.append("wait"), on_acquired=waited.append):
            assert holder.poll() is not None or holder.wait(timeout=5) == 0
        assert events == ["wait"]
        assert waited and waited[0] > 0.2
    finally:
        holder.wait(timeout=30)
    assert lock.exists(), "the lock file must stay: deleting it would race with a waiter"


def test_an_unheld_lock_is_taken_without_waiting(tmp_path: Path) -> None:
    events: list[str] = []
    with exclusive(tmp_path / "a.lock", on_wait=lambda: events.append("wait")):
        pass
    with exclusive(tmp_path / "a.lock", on_wait=lambda: events.append("wait")):
        pass
    assert events == []
