"""Per-clip ingestion tasks: thin wrappers around `m3graph.ingest.pipeline`, passing ids, never objects.

Workflow per submission: for each clip in order, ``cut → (faces ∥ voices) → commit``. Perception may run for
any clip at any time; `commit` (identity resolution + memorization + write) must run in clip order per video,
because the ids it allocates are the `<face_N>` tags later clips see. A chain orders the clips of one
submission only, so two submissions for one video (live mode appending files, a re-run next to a running
one) are ordered by the commit task itself:

* **order check**: a clip commits only once every earlier clip of its video has status ``done`` in the
  graph; otherwise it is re-queued with a countdown (a Celery retry, so no worker process blocks while it
  waits and the earlier clips can run on the same workers) for up to `ORDER_WAIT_S`;
* **per-video lock** (redis-py `Lock`, key ``m3graph:video:<id>``) around the check and the commit, so two
  commits of one video never overlap. It expires after `LOCK_TTL_S` unless the holder's heartbeat extends it,
  so a killed worker frees its video within that time; the commit is idempotent, so a clip whose worker died
  mid-commit is simply committed again by the next attempt.

Progress goes to a Redis hash per video (``m3graph:progress:<id>``, one field per clip and step) rather than
to the graph: a `Clip` node exists only once its commit has written it, and a chain's result shows only its
last task. `m3graph ingest --celery` reads it to show clip i of N and the step, and failures with their error.

Each process opens its own Neo4j driver and Redis client lazily (one per process, as the driver requires) and
loads models on first use.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from celery import Task, chain, group
from celery.signals import worker_process_shutdown

from m3graph.errors import M3GraphError, RetryableError
from m3graph.settings import Settings
from m3graph.tasks.app import app

if TYPE_CHECKING:
    import redis

log = logging.getLogger(__name__)
_local = threading.local()
_RETRY: dict[str, Any] = {"autoretry_for": (RetryableError,), "retry_backoff": True, "retry_jitter": True}

LOCK_PREFIX = "m3graph:video:"
PROGRESS_PREFIX = "m3graph:progress:"
LOCK_TTL_S = 60.0  # a crashed holder frees the video after this; a live one extends it every third of it
LOCK_WAIT_S = 5.0  # block this long for a busy lock, then re-queue instead of holding a worker process
ORDER_WAIT_S = 3600.0  # give up (task fails, visibly) when earlier clips are still not committed after this
ORDER_POLL_MAX_S = 10.0  # longest countdown between two order checks
PROGRESS_TTL_S = 7 * 86400
STEPS = ("cut", "faces", "voices", "commit")


class OrderTimeoutError(M3GraphError):
    """Earlier clips of the video failed, or were not committed in time (deleted, or never submitted)."""


def _settings() -> Settings:
    cached = getattr(_local, "settings", None)
    if cached is None:
        cached = Settings.model_validate_json(app.conf.m3graph_settings)
        _local.settings = cached
    return cached


def _graph():  # type: ignore[no-untyped-def]
    from m3graph.graphdb.store import MemoryGraph

    graph = getattr(_local, "graph", None)
    if graph is None:
        graph = MemoryGraph.connect(_settings())
        _local.graph = graph
    return graph


def _redis() -> redis.Redis:
    client = getattr(_local, "redis", None)
    if client is None:
        client = redis_client(_settings())
        _local.redis = client
    return client


def _memorizer():  # type: ignore[no-untyped-def]
    """One memorizer per process: an LLM memorizer holds a loaded model."""
    from m3graph.reasoning.memorize import make_memorizer

    memorizer = getattr(_local, "memorizer", None)
    if memorizer is None:
        memorizer = make_memorizer(_settings())
        _local.memorizer = memorizer
    return memorizer


def redis_client(settings: Settings) -> redis.Redis:
    import redis

    return redis.Redis.from_url(settings.tasks.redis_url, socket_timeout=30, health_check_interval=30)


@worker_process_shutdown.connect
def _close_graph(**_: Any) -> None:
    graph = getattr(_local, "graph", None)
    if graph is not None:
        graph.close()


def _plan(video_id: str):  # type: ignore[no-untyped-def]
    from m3graph.ingest.pipeline import load_plan

    return load_plan(_settings(), video_id)


# ---------------------------------------------------------------------------------------------- progress


def note(client: redis.Redis, video_id: str, index: int, step: str, state: str, **extra: Any) -> None:
    """Records one step of one clip; each (clip, step) is its own hash field, so parallel steps never race."""
    value = json.dumps({"state": state, "at": time.time(), **extra}, default=str)
    key = PROGRESS_PREFIX + video_id
    with client.pipeline() as pipe:
        pipe.hset(key, f"{index}:{step}", value)
        pipe.expire(key, PROGRESS_TTL_S)
        pipe.execute()


def _note(video_id: str, index: int, step: str, state: str, **extra: Any) -> None:
    """Progress is informational: a Redis hiccup here must not fail (and re-run) a finished step."""
    try:
        note(_redis(), video_id, index, step, state, **extra)
    except Exception:  # noqa: BLE001 - any client error; the step's own result is what matters
        log.warning("could not record progress of %s#%d %s=%s", video_id, index, step, state, exc_info=True)


def reset_progress(client: redis.Redis, video_id: str, indexes: list[int], clip_count: int) -> None:
    """Marks freshly submitted clips as queued, so steps of an earlier submission do not show as current."""
    key = PROGRESS_PREFIX + video_id
    now = time.time()
    with client.pipeline() as pipe:
        fields = [f"{i}:{s}" for i in indexes for s in STEPS]
        if fields:
            pipe.hdel(key, *fields)
        pipe.hset(key, "clip_count", clip_count)
        for i in indexes:
            pipe.hset(key, f"{i}:cut", json.dumps({"state": "queued", "at": now}))
        pipe.expire(key, PROGRESS_TTL_S)
        pipe.execute()


def read_progress(client: redis.Redis, video_id: str) -> tuple[int | None, dict[int, dict[str, dict[str, Any]]]]:
    """(clip count, {clip index: {step: {"state", "at", ...}}}) as recorded by the workers."""
    raw = client.hgetall(PROGRESS_PREFIX + video_id)
    count: int | None = None
    clips: dict[int, dict[str, dict[str, Any]]] = {}
    for k, v in raw.items():
        field = k.decode() if isinstance(k, bytes) else str(k)
        if field == "clip_count":
            count = int(v)
            continue
        index, _, step = field.partition(":")
        with suppress(ValueError):
            clips.setdefault(int(index), {})[step] = json.loads(v)
    return count, clips


class ClipTask(Task):  # type: ignore[misc]
    """Records the final failure and every retry of a clip step in the progress hash (args: video id, index)."""

    step = "?"

    def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        if len(args) >= 2:
            _note(args[0], args[1], self.step, "failed", error=f"{type(exc).__name__}: {exc}")

    def on_retry(self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        if len(args) >= 2 and not isinstance(exc, _Waiting):
            _note(args[0], args[1], self.step, "retrying", error=f"{type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------------------------------- tasks


@app.task(base=ClipTask, step="cut", name="m3graph.ingest.cut", acks_late=True, max_retries=5, **_RETRY)
def cut(video_id: str, index: int) -> str:
    from m3graph.ingest.pipeline import cut_stage

    _note(video_id, index, "cut", "running")
    out = str(cut_stage(_settings(), _plan(video_id), index).clip)
    _note(video_id, index, "cut", "done")
    return out


@app.task(base=ClipTask, step="faces", name="m3graph.ingest.faces", acks_late=True, max_retries=5, **_RETRY)
def faces(video_id: str, index: int) -> int:
    from m3graph.ingest.pipeline import faces_stage

    _note(video_id, index, "faces", "running")
    n = len(faces_stage(_settings(), _plan(video_id), index))
    _note(video_id, index, "faces", "done", clusters=n)
    return n


@app.task(base=ClipTask, step="voices", name="m3graph.ingest.voices", acks_late=True, max_retries=5, **_RETRY)
def voices(video_id: str, index: int) -> int:
    from m3graph.ingest.pipeline import voices_stage

    _note(video_id, index, "voices", "running")
    n = len(voices_stage(_settings(), _plan(video_id), index))
    _note(video_id, index, "voices", "done", clusters=n)
    return n


class _Waiting(Exception):  # noqa: N818 - a reason passed to Celery's retry, never raised to a caller
    """Why a commit was re-queued: earlier clips pending, or the video's lock busy."""


def uncommitted_before(graph: Any, video_id: str, index: int) -> list[int]:
    """Earlier clips of the video whose commit has not finished (no Clip node, or status other than done)."""
    status = {r["clip_index"]: r["status"] for r in graph.ex.read("graph/video_progress", video_id=video_id)}
    return [i for i in range(index) if status.get(i) != "done"]


@contextmanager
def video_lock(client: redis.Redis, video_id: str, ttl_s: float = LOCK_TTL_S,
               wait_s: float = LOCK_WAIT_S) -> Iterator[bool]:
    """Holds ``m3graph:video:<id>`` (yields False when it stays busy for `wait_s`), extended while held.

    The heartbeat thread re-arms the TTL every third of it, so the lock outlives a long commit (an LLM
    memorizer takes minutes) but not a dead process. `thread_local=False` lets that thread extend it.
    """
    lock = client.lock(LOCK_PREFIX + video_id, timeout=ttl_s, blocking=True, blocking_timeout=wait_s,
                       thread_local=False)
    if not lock.acquire():
        yield False
        return
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(ttl_s / 3):
            try:
                lock.reacquire()
            except Exception:  # noqa: BLE001 - lost or unreachable: nothing to extend; the commit goes on
                log.warning("lost the lock of video %s while committing", video_id, exc_info=True)
                return

    heartbeat = threading.Thread(target=beat, name=f"lock-{video_id}", daemon=True)
    heartbeat.start()
    try:
        yield True
    finally:
        stop.set()
        heartbeat.join()
        with suppress(Exception):  # expired (LockNotOwnedError) or Redis gone: nothing left to release
            lock.release()


def failed_before(client: redis.Redis, video_id: str, pending: list[int]) -> tuple[int, str] | None:
    """The first pending earlier clip whose current submission failed for good, with its error."""
    _, clips = read_progress(client, video_id)
    for i in pending:
        for step in STEPS:
            state = clips.get(i, {}).get(step, {})
            if state.get("state") == "failed":
                return i, f"{step}: {state.get('error', '?')}"
    return None


def _wait(task: Task, video_id: str, index: int, since: float, waits: int, errors: int, why: str,
          pending: list[int] | None = None) -> None:
    """Re-queues the commit with a growing countdown, or fails it when waiting cannot help any more."""
    failed = failed_before(_redis(), video_id, pending) if pending else None
    if failed is not None:
        raise OrderTimeoutError(f"clip {index} of video {video_id} cannot be committed: earlier clip {failed[0]} "
                                f"failed ({failed[1]}); re-submit both")
    waited = time.time() - since
    if waited > ORDER_WAIT_S:
        raise OrderTimeoutError(f"clip {index} of video {video_id}: {why} after {waited:.0f} s")
    _note(video_id, index, "commit", "waiting", detail=why)
    countdown = min(ORDER_POLL_MAX_S, 0.5 * 2 ** min(waits, 5))
    raise task.retry(exc=_Waiting(why), countdown=countdown,
                     kwargs={"waiting_since": since, "waits": waits + 1, "errors": errors})


@app.task(bind=True, base=ClipTask, step="commit", name="m3graph.ingest.commit", acks_late=True,
          max_retries=None)
def commit(self: Task, video_id: str, index: int, waiting_since: float | None = None, waits: int = 0,
           errors: int = 0) -> dict[str, Any]:
    """Commits one clip once all earlier clips of its video are committed, under the video's lock.

    Waiting and error retries have separate budgets (`ORDER_WAIT_S`, `tasks.max_retries`) carried in the
    task's kwargs, so a long wait never uses up the retries a transient database error needs.
    """
    from m3graph.embedding import text_embedder
    from m3graph.ingest.pipeline import commit_clip

    settings, graph, client = _settings(), _graph(), _redis()
    since = waiting_since if waiting_since is not None else time.time()
    try:
        pending = uncommitted_before(graph, video_id, index)  # cheap check first: no lock traffic while waiting
        if pending:
            _wait(self, video_id, index, since, waits, errors, f"waiting for clip {pending[0]}", pending)
        with video_lock(client, video_id) as held:
            if not held:
                _wait(self, video_id, index, since, waits, errors, "video locked by another commit")
            pending = uncommitted_before(graph, video_id, index)  # again, now that nothing else can commit
            if pending:
                _wait(self, video_id, index, since, waits, errors, f"waiting for clip {pending[0]}", pending)
            _note(video_id, index, "commit", "running")
            report = commit_clip(graph, text_embedder(settings), _memorizer(), _plan(video_id), index).__dict__
    except RetryableError as exc:
        if errors >= settings.tasks.max_retries:
            raise
        # ClipTask.on_retry records "retrying" with the error
        raise self.retry(exc=exc, countdown=settings.tasks.retry_backoff_s * 2 ** errors,
                         kwargs={"waiting_since": waiting_since, "waits": waits, "errors": errors + 1}) from exc
    _note(video_id, index, "commit", "done", report=report)
    return report


# ---------------------------------------------------------------------------------------------- workflows


def video_workflow(video_id: str, clip_indexes: list[int]) -> chain:
    """One chain per submission: its clips in order; `commit` orders it against other submissions."""
    steps = []
    for index in clip_indexes:
        steps += [cut.si(video_id, index), group(faces.si(video_id, index), voices.si(video_id, index)),
                  commit.si(video_id, index)]
    return chain(*steps)


def submit_clips(settings: Settings, video_id: str, indexes: list[int], clip_count: int) -> Any:
    """Queues the workflow of some planned clips of a video (its plan must exist in `settings.data_dir`)."""
    client = redis_client(settings)
    try:
        reset_progress(client, video_id, indexes, clip_count)
    finally:
        client.close()
    return video_workflow(video_id, indexes).apply_async()


def submit_video(settings: Settings, source: Path, video_id: str, append: bool = False) -> tuple[Any, int]:
    """Plans the video here (bad input fails fast, before anything is queued) and queues its workflow.

    Returns the chain's result and the video's clip count; the submitted clips are those of `source`.
    """
    indexes, total = plan_source(settings, source, video_id, append)
    return submit_clips(settings, video_id, indexes, total), total


def plan_source(settings: Settings, source: Path, video_id: str, append: bool = False) -> tuple[list[int], int]:
    """The clip indexes that `source` contributes to the video, and the video's clip count."""
    from m3graph.ingest.pipeline import plan_video

    plan = plan_video(settings, source, video_id, append=append)
    resolved = str(source.resolve())
    return [w.index for w in plan.windows if w.source == resolved], len(plan.windows)
