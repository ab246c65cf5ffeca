"""One cross-process lock on a file, shared by every package that serialises work between processes of one host.

Why one module: the local server (two test sessions racing for one Neo4j home), the pipeline (two submissions
cutting the same clip) and the model assembler (two processes joining one model's parts) each need the same
`flock` on a lock file that stays in place (deleting it would race with a waiter). It imports nothing of
m3graph, so the local server tooling, whose layer rule allows only a few low-level modules, may use it too.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(lock_path: Path, on_wait: Callable[[], None] | None = None,
              on_acquired: Callable[[float], None] | None = None) -> Iterator[None]:
    """Hold an exclusive `flock` on `lock_path` (created with its folder when missing) for the block.

    `on_wait` is called once when another process holds the lock, `on_acquired` with the seconds waited once it
    is ours after such a wait: callers that may wait long (model assembly) say so in their logs.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            start = time.monotonic()
            if on_wait is not None:
                on_wait()
            fcntl.flock(handle, fcntl.LOCK_EX)
            if on_acquired is not None:
                on_acquired(time.monotonic() - start)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
