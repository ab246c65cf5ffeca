"""The order policy of *resolve*: clip order per video, across submissions, with a per-video lock.

Resolve must run in clip order per video (the ids it allocates are the `<face_N>` tags later clips see). A
chain orders the clips of one submission only, so two submissions for one video (live mode appending files,
a re-run next to a running one, two users) are ordered here:

* **order check**: a clip resolves only once every earlier clip of its video is resolved (its `Clip` state,
  m3graph/graphdb/clip_state.py); otherwise the task is re-queued with a growing countdown (a Celery retry, so
  no worker process blocks while it waits) for up to `ORDER_WAIT_S`;
* **per-video lock** (redis-py `Lock`, key ``m3graph:video:<id>``) around the check and the resolve, so two
  resolves of one video never overlap. It expires after `LOCK_TTL_S` unless the holder's heartbeat extends it,
  so a killed worker frees its video within that time; resolve is idempotent, so a clip whose worker died
  mid-resolve is simply resolved again by the next attempt.

Memorization takes neither: it is order-free, and its write serializes per video inside its own transaction.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

from celery import Task

from m3graph.errors import M3GraphError
from m3graph.tasks.progress import failed_before

if TYPE_CHECKING:
    import redis

log = logging.getLogger(__name__)

LOCK_PREFIX = "m3graph:video:"
LOCK_TTL_S = 60.0  # a crashed holder frees the video after this; a live one extends it every third of it
LOCK_WAIT_S = 5.0  # block this long for a busy lock, then re-queue instead of holding a worker process
ORDER_WAIT_S = 3600.0  # give up (task fails, visibly) when earlier clips are still not resolved after this
ORDER_POLL_MAX_S = 10.0  # longest countdown between two order checks


class OrderTimeoutError(M3GraphError):
    """Earlier clips of the video failed, or were not resolved in time (deleted, or never submitted)."""


class Waiting(Exception):  # noqa: N818 - a reason passed to Celery's retry, never raised to a caller
    """Why a resolve was re-queued: earlier clips pending, or the video's lock busy."""


@contextmanager
def video_lock(client: redis.Redis, source_id: str, ttl_s: float = LOCK_TTL_S,
               wait_s: float = LOCK_WAIT_S) -> Iterator[bool]:
    """Holds ``m3graph:video:<id>`` (yields False when it stays busy for `wait_s`), extended while held.

    The heartbeat thread re-arms the TTL every third of it, so the lock outlives a slow resolve but not a dead
    process. `thread_local=False` lets that thread extend it.
    """
    lock = client.lock(LOCK_PREFIX + source_id, timeout=ttl_s, blocking=True, blocking_timeout=wait_s,
                       thread_local=False)
    if not lock.acquire():
        yield False
        return
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(ttl_s / 3):
            try:
                lock.reacquire()
            except Exception:  # noqa: BLE001 - lost or unreachable: nothing to extend; the step goes on
                log.warning("lost the lock of video %s", source_id, exc_info=True)
                return

    heartbeat = threading.Thread(target=beat, name=f"lock-{source_id}", daemon=True)
    heartbeat.start()
    try:
        yield True
    finally:
        stop.set()
        heartbeat.join()
        with suppress(Exception):  # expired (LockNotOwnedError) or Redis gone: nothing left to release
            lock.release()


def requeue(task: Task, client: redis.Redis, source_id: str, index: int, since: float, waits: int, errors: int,
            why: str, pending: list[int] | None = None, noted: Callable[[str], None] | None = None) -> None:
    """Re-queues the step with a growing countdown, or fails it when waiting cannot help any more."""
    failed = failed_before(client, source_id, pending) if pending else None
    if failed is not None:
        raise OrderTimeoutError(f"clip {index} of video {source_id} cannot be resolved: earlier clip {failed[0]} "
                                f"failed ({failed[1]}); re-submit both")
    waited = time.time() - since
    if waited > ORDER_WAIT_S:
        raise OrderTimeoutError(f"clip {index} of video {source_id}: {why} after {waited:.0f} s")
    if noted is not None:
        noted(why)
    countdown = min(ORDER_POLL_MAX_S, 0.5 * 2 ** min(waits, 5))
    raise task.retry(exc=Waiting(why), countdown=countdown,
                     kwargs={"waiting_since": since, "waits": waits + 1, "errors": errors})
