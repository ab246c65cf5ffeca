"""Live mode: a stream arrives as a sequence of files in a directory; each is ingested once it stops growing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

VIDEO_SUFFIXES = {".mp4", ".mkv", ".mov", ".avi", ".webm", ".ts", ".m4v"}


def watch_clips(directory: Path, poll_s: float = 1.0, stop_event: threading.Event | None = None,
                settle_s: float = 2.0) -> Iterator[Path]:
    """Yields each new video file once, in name order, after its size has been stable for `settle_s`.

    Segment writers (ffmpeg's segment muxer, cameras) name files in time order, so name order is stream order.
    Partial files (``.part``/``.tmp``) are ignored until renamed.
    """
    stop = stop_event or threading.Event()
    seen: set[Path] = set()
    sizes: dict[Path, tuple[int, float]] = {}
    clock = 0.0
    while not stop.is_set():
        for path in sorted(directory.glob("*")):
            if path in seen or path.suffix.lower() not in VIDEO_SUFFIXES or ".part" in path.name:
                continue
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                continue
            last = sizes.get(path)
            if last is None or last[0] != size:
                sizes[path] = (size, clock)
            elif size > 0 and clock - last[1] >= settle_s:
                seen.add(path)
                sizes.pop(path, None)
                yield path
        stop.wait(poll_s)
        clock += poll_s
