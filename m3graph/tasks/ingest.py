"""Per-clip ingestion tasks: thin wrappers around `m3graph.ingest.pipeline`, passing ids, never objects.

Workflow per submission: for each clip in order, ``cut → (faces ∥ voices) → resolve``; each resolve that
succeeds queues its clip's ``memorize`` as a task of its own, outside the chain, so memorizing clip N (the
slow model call) overlaps clip N+1's perception and resolve. Resolve runs in clip order per video under the
order policy of `m3graph.tasks.ordering`; memorize runs in any order (its write serializes per video inside
its transaction). Progress: the clip's state in the graph (`MemoryGraph.clip_states`), plus this
submission's step activity in `m3graph.tasks.progress`. Process resources: `m3graph.tasks.runtime`.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from celery import Task, chain, group

from m3graph.errors import RetryableError
from m3graph.settings import Settings
from m3graph.tasks import runtime
from m3graph.tasks.app import app
from m3graph.tasks.ordering import Waiting, requeue, video_lock
from m3graph.tasks.progress import reset_progress, safe_note
from m3graph.tasks.runtime import redis_client

if TYPE_CHECKING:  # the pipeline is imported lazily: a worker loads its models only when a task runs
    from m3graph.ingest.pipeline import VideoPlan

log = logging.getLogger(__name__)
_RETRY: dict[str, Any] = {"autoretry_for": (RetryableError,), "retry_backoff": True, "retry_jitter": True}
_settings = runtime.settings  # the worker's own settings object (see m3graph.tasks.app)

__all__ = ["cut", "faces", "memorize", "plan_source", "redis_client", "resolve", "submit_clips", "submit_video",
           "video_workflow"]


def _note(source_id: str, index: int, step: str, state: str, **extra: Any) -> None:
    safe_note(runtime.redis_conn, source_id, index, step, state, **extra)


def _plan(source_id: str) -> VideoPlan:
    from m3graph.ingest.pipeline import load_plan

    return load_plan(_settings(), source_id)


class ClipTask(Task):
    """Records the final failure and every retry of a clip step in the progress hash (args: video id, index)."""

    step = "?"

    def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        if len(args) >= 2:
            _note(args[0], args[1], self.step, "failed", error=f"{type(exc).__name__}: {exc}")

    def on_retry(self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        if len(args) >= 2 and not isinstance(exc, Waiting):
            _note(args[0], args[1], self.step, "retrying", error=f"{type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------------------------------- tasks


@app.task(base=ClipTask, step="cut", name="m3graph.ingest.cut", acks_late=True, max_retries=5, **_RETRY)
def cut(source_id: str, index: int) -> str:
    from m3graph.ingest.pipeline import cut_stage

    _note(source_id, index, "cut", "running")
    out = str(cut_stage(_settings(), _plan(source_id), index).clip)
    _note(source_id, index, "cut", "done")
    return out


@app.task(base=ClipTask, step="faces", name="m3graph.ingest.faces", acks_late=True, max_retries=5, **_RETRY)
def faces(source_id: str, index: int) -> int:
    from m3graph.ingest.pipeline import faces_stage

    _note(source_id, index, "faces", "running")
    n = len(faces_stage(_settings(), _plan(source_id), index))
    _note(source_id, index, "faces", "done", clusters=n)
    return n


@app.task(base=ClipTask, step="voices", name="m3graph.ingest.voices", acks_late=True, max_retries=5, **_RETRY)
def voices(source_id: str, index: int) -> int:
    from m3graph.ingest.pipeline import voices_stage

    _note(source_id, index, "voices", "running")
    n = len(voices_stage(_settings(), _plan(source_id), index))
    _note(source_id, index, "voices", "done", clusters=n)
    return n


def _retry_transient(task: Task, exc: RetryableError, errors: int, **kwargs: Any) -> None:
    """Error retries have their own budget (`tasks.max_retries`), separate from the order wait's."""
    settings = _settings()
    if errors >= settings.tasks.max_retries:
        raise exc
    # ClipTask.on_retry records "retrying" with the error
    raise task.retry(exc=exc, countdown=settings.tasks.retry_backoff_s * 2 ** errors,
                     kwargs={**kwargs, "errors": errors + 1}) from exc


@app.task(bind=True, base=ClipTask, step="resolve", name="m3graph.ingest.resolve", acks_late=True,
          max_retries=None)
def resolve(self: Task, source_id: str, index: int, waiting_since: float | None = None, waits: int = 0,
            errors: int = 0) -> dict[str, Any]:
    """Resolves one clip once all earlier clips of its video are resolved, under the video's lock; then queues
    its memorization."""
    from m3graph.ingest.pipeline import resolve_clip

    graph, client = runtime.graph(), runtime.redis_conn()
    since = waiting_since if waiting_since is not None else time.time()

    def waiting(why: str) -> None:
        _note(source_id, index, "resolve", "waiting", detail=why)

    try:
        graph.mark_perceived(source_id, index)
        pending = graph.unresolved_before(source_id, index)  # cheap check first: no lock traffic while waiting
        if pending:
            requeue(self, client, source_id, index, since, waits, errors, f"waiting for clip {pending[0]}", pending,
                    waiting)
        with video_lock(client, source_id) as held:
            if not held:
                requeue(self, client, source_id, index, since, waits, errors, "video locked by another resolve",
                        noted=waiting)
            pending = graph.unresolved_before(source_id, index)  # again, now that nothing else can resolve
            if pending:
                requeue(self, client, source_id, index, since, waits, errors, f"waiting for clip {pending[0]}",
                        pending, waiting)
            _note(source_id, index, "resolve", "running")
            done = resolve_clip(graph, _plan(source_id), index)
    except RetryableError as exc:
        _retry_transient(self, exc, errors, waiting_since=waiting_since, waits=waits)
    report = {"faces": sorted(done.face_ids.values()), "voices": sorted(done.voice_ids.values()),
              "new_entities": done.created}
    _note(source_id, index, "resolve", "done", report=report)
    _note(source_id, index, "memorize", "queued")
    memorize.apply_async((source_id, index), {"new_entities": done.created})
    return report


@app.task(bind=True, base=ClipTask, step="memorize", name="m3graph.ingest.memorize", acks_late=True,
          max_retries=None)
def memorize(self: Task, source_id: str, index: int, new_entities: int = 0, errors: int = 0) -> dict[str, Any]:
    """Memorizes one resolved clip; a model failure leaves the clip `memorize_failed` with its old memories.

    A model that is unreachable or timing out (`LLMUnavailableError`) and a transient database error are
    retried with backoff; the clip's state says memorize_failed meanwhile, and memorized once a retry succeeds.
    """
    from m3graph.ingest.pipeline import MemorizeFailedError, memorize_clip

    _note(source_id, index, "memorize", "running")
    try:
        report = memorize_clip(runtime.graph(), runtime.embedder(), runtime.memorizer(), _plan(source_id),
                               index).__dict__
    except MemorizeFailedError as exc:
        if isinstance(exc.__cause__, RetryableError):
            _retry_transient(self, exc.__cause__, errors, new_entities=new_entities)
        raise
    except RetryableError as exc:
        _retry_transient(self, exc, errors, new_entities=new_entities)
    report["new_entities"] = new_entities
    if report.get("memorize_error"):
        _note(source_id, index, "memorize", "failed", error=report["memorize_error"], report=report)
    else:
        _note(source_id, index, "memorize", "done", report=report)
    return report


# ---------------------------------------------------------------------------------------------- workflows


def video_workflow(source_id: str, clip_indexes: list[int]) -> chain:
    """One chain per submission: its clips' perception and resolve in order; memorization runs beside it."""
    steps = []
    for index in clip_indexes:
        steps += [cut.si(source_id, index), group(faces.si(source_id, index), voices.si(source_id, index)),
                  resolve.si(source_id, index)]
    return chain(*steps)


def submit_clips(settings: Settings, source_id: str, indexes: list[int], clip_count: int) -> Any:
    """Queues the workflow of some planned clips of a video (its plan must exist in `settings.data_dir`)."""
    client = redis_client(settings)
    try:
        reset_progress(client, source_id, indexes, clip_count)
    finally:
        client.close()
    return video_workflow(source_id, indexes).apply_async()


def submit_video(settings: Settings, source: Path, source_id: str, append: bool = False) -> tuple[Any, int]:
    """Plans the video here (bad input fails fast, before anything is queued) and queues its workflow.

    Returns the chain's result and the video's clip count; the submitted clips are those of `source`.
    """
    indexes, total = plan_source(settings, source, source_id, append)
    return submit_clips(settings, source_id, indexes, total), total


def plan_source(settings: Settings, source: Path, source_id: str, append: bool = False) -> tuple[list[int], int]:
    """The clip indexes that `source` contributes to the video, and the video's clip count.

    The planned clips are written to the graph (state `planned`), so progress is visible from the start and
    the order check sees every clip of the video.
    """
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.ingest.pipeline import clip_infos, plan_video
    from m3graph.ingest.video import resolved_source

    plan = plan_video(settings, source, source_id, append=append)
    resolved = resolved_source(source)
    indexes = [w.index for w in plan.windows if w.source == resolved]
    with MemoryGraph.connect(settings) as graph:
        graph.plan_clips(clip_infos(settings, plan, indexes), video_name=source_id)
    return indexes, len(plan.windows)
