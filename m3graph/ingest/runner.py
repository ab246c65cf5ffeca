"""What an ingestion run does, for any front end: run or queue the per-video workflow, report progress to a sink,
summarise each video, and say which videos failed.

Why apart from the command line: the CLI (`m3graph ingest`, with its terminal view in `m3graph.cli.ingest`) and
the MCP server's ingestion jobs (with the service's in-memory `JobLog`) run the same ingestion; only how progress
is shown differs. This module never prints and never imports click: progress goes to a `ProgressSink` (the four
calls `update`, `message`, `finish` and `current`), and a run with failed videos raises `IngestFailed` after the
other videos went on.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from m3graph.errors import M3GraphError
from m3graph.settings import Settings

POLL_S = 0.5


class ProgressSink(Protocol):
    """Where a run reports progress: a terminal view, or a job's log that a client polls."""

    tty: bool
    current: dict[str, tuple[int, int, str, str | None]]  # video -> (index, total, stage, detail)

    def update(self, video: str, index: int, total: int, stage: str, detail: str | None = None) -> None: ...

    def message(self, text: str, err: bool = False) -> None: ...

    def finish(self, video: str) -> None: ...


class IngestFailed(M3GraphError):
    """Some videos of the run failed (each was reported to the sink with its clip and stage)."""

    def __init__(self, failed: Sequence[str]) -> None:
        self.failed = list(failed)
        super().__init__(f"{_n(len(self.failed), 'video')} failed: {', '.join(self.failed)}")


def _video_id(path: Path) -> str:
    # ASCII only and at most 128 characters (the graph's video id rule): "café (1).mp4" becomes "caf---1".
    stem = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "._-" else "-" for ch in path.stem)
    return stem.strip("-._")[:128].rstrip("-._") or "video"


def _n(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {plural or word + 's'}"


def summary(graph: Any, source_id: str, reports: Sequence[dict[str, Any]]) -> str:
    """Entities found in this run's clips of one video; characters come from the graph (after merges)."""
    faces = sorted({f for r in reports for f in r["faces"]})
    voices = sorted({v for r in reports for v in r["voices"]})
    chars = set(graph.characters_of(faces + voices).values()) if faces or voices else set()
    memories = sum(int(r["memories"]) for r in reports)
    created = sum(int(r["new_entities"]) for r in reports)
    return (f"{source_id}: {_n(len(reports), 'clip')} ingested: {_n(len(faces), 'face')}, "
            f"{_n(len(voices), 'voice')}, {_n(len(chars), 'character')}, {_n(memories, 'memory', 'memories')}, "
            f"{_n(created, 'new entity', 'new entities')}")


def graph_totals(graph: Any) -> str:
    counts = graph.counts()
    return (f"graph: {_n(counts.get('Face', 0), 'face')}, {_n(counts.get('Voice', 0), 'voice')}, "
            f"{_n(counts.get('Character', 0), 'character')}, {_n(counts.get('Memory', 0), 'memory', 'memories')}")


def _failure(video: str, state: tuple[int, int, str, str | None] | None, error: str) -> str:
    if state is None:
        return f"{video}: FAILED before its first clip: {error}"
    index, total, stage, _ = state
    return f"{video}: clip {index + 1}/{total} FAILED at {stage}: {error}"


# ---------------------------------------------------------------------------------------------- in-process


def _inprocess(settings: Settings, sources: list[tuple[Path, str]], view: ProgressSink,
               append: bool = False) -> list[str]:
    from m3graph.embedding import text_embedder
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.ingest.pipeline import ingest_video_inprocess
    from m3graph.reasoning.memorize import make_memorizer

    failed = []
    embedder = text_embedder(settings)
    memorizer = make_memorizer(settings)
    with MemoryGraph.connect(settings) as graph:
        for source, vid in sources:
            try:
                reports = ingest_video_inprocess(graph, embedder, source, vid, memorizer=memorizer,
                                                 progress=view.update, append=append)
            except Exception as exc:  # noqa: BLE001 - shown with its clip; the other videos still run
                view.finish(vid)
                view.message(_failure(vid, view.current.get(vid), f"{type(exc).__name__}: {exc}"), err=True)
                failed.append(vid)
                continue
            view.finish(vid)
            view.message(summary(graph, vid, [r.__dict__ for r in reports]))
        view.message(graph_totals(graph))
    return failed


# ---------------------------------------------------------------------------------------------- entry point


Runner = Callable[..., list[str]]  # (settings, [(source, video id)], view, append=False) -> failed video ids


def run_ingest(settings: Settings, videos: list[Path], live_dir: Path | None, runner: Runner | None,
               source_id: str | None, view: ProgressSink) -> None:
    """Ingests in this process, or with `runner` (`m3graph.tasks.follow.run_celery`: queue and follow workers).

    The Celery runner is passed in rather than imported, so this package never imports `m3graph.tasks`
    (tasks depend on ingestion, one way). Raises `IngestFailed` naming the videos that failed.
    """
    from m3graph.localserver.server import ensure_server

    ensure_server(settings)
    if not view.tty:
        _quiet_library_bars()
    run = runner or _inprocess
    sources = [(p, source_id or _video_id(p)) for p in videos]
    failed: list[str] = []
    if sources:
        failed += run(settings, sources, view)
    if live_dir is not None:
        failed += _live(settings, live_dir, source_id, run, view)
    if failed:
        raise IngestFailed(failed)


def _quiet_library_bars() -> None:
    """Model loaders draw tqdm bars (carriage returns) on stderr; in a log they are noise between our lines."""
    try:
        from huggingface_hub.utils import disable_progress_bars
    except ImportError:  # no embedding extra: no model loader to quiet
        return
    disable_progress_bars()  # transformers copies this switch when it is first imported
    if "transformers" in sys.modules:  # already imported: flip its own copy too
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


def _live(settings: Settings, live_dir: Path, source_id: str | None, run: Runner, view: ProgressSink) -> list[str]:
    from m3graph.ingest.live import watch_clips

    live_id = source_id or _video_id(live_dir)
    stop = threading.Event()
    failed: list[str] = []
    view.message(f"watching {live_dir}: each new file continues video {live_id} (Ctrl-C to stop)")
    paths: Iterable[Path] = watch_clips(live_dir, poll_s=1.0, stop_event=stop, settle_s=2.0)
    try:
        for path in paths:
            failed += run(settings, [(path, live_id)], view, append=True)
    except KeyboardInterrupt:
        stop.set()
    return failed


__all__ = ["POLL_S", "IngestFailed", "ProgressSink", "Runner", "graph_totals", "run_ingest", "summary"]
