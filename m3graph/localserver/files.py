"""Small file helpers of the local server: a cross-process lock and reading the tails of its logs."""

from __future__ import annotations

import fcntl
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Serialise build/start/stop across processes: two test sessions must not race for one home."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(_ANSI.sub("", line) for line in text.splitlines()[-lines:])


def last_line(path: Path) -> str:
    lines = tail(path, lines=1).strip().splitlines()
    return lines[-1] if lines else ""


def size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_from(path: Path, offset: int) -> str:
    """What a log gained since `offset` (all of it when it was rotated meanwhile)."""
    try:
        with path.open("rb") as handle:
            if size(path) >= offset:
                handle.seek(offset)
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
