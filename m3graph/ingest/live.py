"""Live mode: a stream arrives as a sequence of files in a directory; each is ingested once it stops growing.

Segment writers (ffmpeg's segment muxer, cameras, `rsync`) name files in time order and write them in place,
so a file is only safe to read once its size has stopped changing, and name order is stream order. There is
no portable "file closed" notification, hence polling with a settle time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

from m3graph.errors import InvalidInputError

VIDEO_SUFFIXES = frozenset({".mp4", ".mkv", ".mov", ".avi", ".webm", ".ts", ".m4v", ".flv"})
# Names that writers use while a file is incomplete; such files are taken only after their final rename.
PARTIAL_MARKERS = (".part", ".tmp", ".partial", ".crdownload", ".download")


def _is_candidate(path: Path) -> bool:
    name = path.name
    return (path.suffix.lower() in VIDEO_SUFFIXES and not name.startswith(".")
            and not any(marker in name.lower() for marker in PARTIAL_MARKERS))


def watch_clips(directory: Path, poll_s: float = 1.0, stop_event: threading.Event | None = None,
                settle_s: float = 2.0) -> Iterator[Path]:
    """Yields each new video file of `directory` once, in name order, after its size was stable for `settle_s`.

    A file is held back while an earlier-named file is still growing, so files come out in stream order even
    when a later segment happens to be finished first. The generator returns soon after `stop_event` is set
    (within one `poll_s`, or at once when the consumer resumes it); without an event it runs until closed.
    Time is measured with a monotonic clock, so slow consumers and clock changes do not shorten the settle time.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise InvalidInputError(f"{directory}: the live directory does not exist or is not a directory")
    if poll_s <= 0 or settle_s < 0:
        raise InvalidInputError(f"poll_s must be positive and settle_s not negative (got {poll_s}, {settle_s})")
    stop = stop_event or threading.Event()
    seen: set[str] = set()
    # name -> (size, mtime_ns, monotonic time at which that (size, mtime) was first observed)
    observed: dict[str, tuple[int, int, float]] = {}
    while not stop.is_set():
        try:
            names = sorted(p.name for p in directory.iterdir() if p.name not in seen and _is_candidate(p))
        except FileNotFoundError:
            names = []  # the directory was removed; keep waiting for it to come back or for the stop
        now = time.monotonic()
        settled: dict[str, bool] = {}
        for name in names:
            try:
                st = (directory / name).stat()
            except FileNotFoundError:
                continue  # removed since the listing: neither yielded nor waited for
            if st.st_size == 0:
                continue  # an empty placeholder (possibly abandoned) does not hold back the files after it
            last = observed.get(name)
            if last is None or last[:2] != (st.st_size, st.st_mtime_ns):
                observed[name] = (st.st_size, st.st_mtime_ns, now)  # new, or still growing: the clock restarts
                settled[name] = False
            else:
                settled[name] = now - last[2] >= settle_s
        for name in names:
            if stop.is_set():
                return
            if name not in settled:
                continue
            if not settled[name]:
                break  # an earlier name is not finished: later ones wait, so the order is the stream's
            seen.add(name)
            observed.pop(name, None)
            yield directory / name
        for gone in set(observed) - set(names):
            observed.pop(gone, None)  # deleted before it settled
        stop.wait(poll_s)
