"""Small file helpers of the local server: reading the tails of its logs (its lock is m3graph.file_locks)."""

from __future__ import annotations

import re
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


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
