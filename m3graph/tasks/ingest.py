"""Per-clip ingestion tasks: thin wrappers around `m3graph.ingest.pipeline`, passing ids, never objects.

Workflow per video: for each clip in order, ``cut → (faces ∥ voices) → commit``; the chain makes `commit`
(identity resolution + memorization + write) run in clip order per video, while different videos run in
parallel on as many workers as there are. Each process opens its own Neo4j driver lazily (one per process,
as the driver requires) and loads models on first use.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from celery import chain, group
from celery.signals import worker_process_shutdown

from m3graph.errors import RetryableError
from m3graph.settings import Settings
from m3graph.tasks.app import app

_local = threading.local()
_RETRY: dict[str, Any] = {"autoretry_for": (RetryableError,), "retry_backoff": True, "retry_jitter": True}


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


@worker_process_shutdown.connect
def _close_graph(**_: Any) -> None:
    graph = getattr(_local, "graph", None)
    if graph is not None:
        graph.close()


def _plan(video_id: str):  # type: ignore[no-untyped-def]
    from m3graph.ingest.pipeline import load_plan

    return load_plan(_settings(), video_id)


@app.task(name="m3graph.ingest.cut", acks_late=True, max_retries=5, **_RETRY)
def cut(video_id: str, index: int) -> str:
    from m3graph.ingest.pipeline import cut_stage

    return str(cut_stage(_settings(), _plan(video_id), index).clip)


@app.task(name="m3graph.ingest.faces", acks_late=True, max_retries=5, **_RETRY)
def faces(video_id: str, index: int) -> int:
    from m3graph.ingest.pipeline import faces_stage

    return len(faces_stage(_settings(), _plan(video_id), index))


@app.task(name="m3graph.ingest.voices", acks_late=True, max_retries=5, **_RETRY)
def voices(video_id: str, index: int) -> int:
    from m3graph.ingest.pipeline import voices_stage

    return len(voices_stage(_settings(), _plan(video_id), index))


@app.task(name="m3graph.ingest.commit", acks_late=True, max_retries=5, **_RETRY)
def commit(video_id: str, index: int) -> dict[str, Any]:
    from m3graph.embedding import text_embedder
    from m3graph.ingest.pipeline import commit_clip
    from m3graph.reasoning.perception_memorizer import PerceptionMemorizer

    report = commit_clip(_graph(), text_embedder(_settings()), PerceptionMemorizer(), _plan(video_id), index)
    return report.__dict__


def video_workflow(video_id: str, clip_indexes: list[int]) -> chain:
    """One chain per video: clips strictly in order for the commit step."""
    steps = []
    for index in clip_indexes:
        steps += [cut.si(video_id, index), group(faces.si(video_id, index), voices.si(video_id, index)),
                  commit.si(video_id, index)]
    return chain(*steps)


def submit_video(settings: Settings, source: Path, video_id: str, append: bool = False) -> tuple[Any, int]:
    """Plans the video here (bad input fails fast, before anything is queued) and queues its workflow."""
    from m3graph.ingest.pipeline import plan_video

    plan = plan_video(settings, source, video_id, append=append)
    resolved = str(source.resolve())
    indexes = [w.index for w in plan.windows if w.source == resolved]
    return video_workflow(video_id, indexes).apply_async(), len(plan.windows)
