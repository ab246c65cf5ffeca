"""What `m3graph ingest` does: run or queue the per-video workflow, show progress per clip and stage, summarise.

Progress comes from the pipeline's callback in-process, and with `--celery` from `m3graph.tasks.follow` (the
workers' step activity), so both modes print the same lines: the video, a bar, clip i of N, the stage, the
elapsed time. On a terminal one status line is redrawn in place; anywhere else (CI logs, a pipe) every change
is a plain line without control characters. A failed clip is shown with its stage and error; the other videos
go on, and the command exits non-zero at the end.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

import click

from m3graph.settings import Settings

BAR_WIDTH = 20
POLL_S = 0.5
# How far through a clip each stage is, for the bar: perception dominates a clip's time.
STAGE_FRACTION = {"queued": 0.0, "cut": 0.05, "faces": 0.15, "voices": 0.15, "faces+voices": 0.15,
                  "perceived": 0.8, "waiting": 0.8, "resolve": 0.8, "memorize": 0.85, "done": 1.0, "failed": 0.0}
# Pipeline callback stage -> displayed stage (in-process, faces and voices run together in two threads).
INPROCESS_STAGE = {"perceive": "faces+voices"}


def _video_id(path: Path) -> str:
    # ASCII only and at most 128 characters (the graph's video id rule): "café (1).mp4" becomes "caf---1".
    stem = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "._-" else "-" for ch in path.stem)
    return stem.strip("-._")[:128].rstrip("-._") or "video"


def _n(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {plural or word + 's'}"


# ---------------------------------------------------------------------------------------------- rendering


class ProgressView:
    """Progress lines per video; a redrawn status line on a TTY, plain lines otherwise."""

    def __init__(self, stream: IO[str] | None = None, tty: bool | None = None) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.started: dict[str, float] = {}
        self.current: dict[str, tuple[int, int, str, str | None]] = {}  # video -> (index, total, stage, detail)
        self.active: dict[str, str] = {}  # unfinished video -> its status text (TTY line)
        self._drawn = 0  # characters of the status line now on screen

    def line(self, video: str, index: int, total: int, stage: str, detail: str | None = None) -> str:
        frac = min(1.0, (index + STAGE_FRACTION.get(stage, 0.0)) / max(total, 1))
        filled = round(frac * BAR_WIDTH)
        now = time.monotonic()
        elapsed = now - self.started.setdefault(video, now)
        extra = f" ({detail})" if detail else ""
        return (f"  {video} [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] clip {index + 1}/{total} "
                f"{stage}{extra}  {elapsed:.1f} s")

    def update(self, video: str, index: int, total: int, stage: str, detail: str | None = None) -> None:
        """One clip reached a stage; repeated calls with the same state print nothing."""
        stage = INPROCESS_STAGE.get(stage, stage)
        state = (index, total, stage, detail)
        if self.current.get(video) == state:
            return
        self.current[video] = state
        text = self.line(video, index, total, stage, detail)
        if not self.tty:
            self._write(text + "\n")
            return
        if stage in ("done", "failed"):  # finished clips stay on screen, above the status line
            self.active.pop(video, None)
            self._permanent(text)
        else:
            self.active[video] = text.strip()
            self._redraw()

    def message(self, text: str, err: bool = False) -> None:
        """A line of its own (summary, failure), printed above the status line on a TTY."""
        if self.tty:
            self._clear()
        click.echo(text, err=err)
        if self.tty:
            self._redraw()

    def finish(self, video: str) -> None:
        self.active.pop(video, None)
        if self.tty:
            self._redraw()

    def _permanent(self, text: str) -> None:
        self._clear()
        self._write(text + "\n")
        self._redraw()

    def _clear(self) -> None:
        if self._drawn:
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _redraw(self) -> None:
        self._clear()
        if self.active:
            text = " | ".join(self.active.values())
            self._write(text)
            self._drawn = len(text)

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


# ---------------------------------------------------------------------------------------------- summary


def summary(graph: Any, video_id: str, reports: Sequence[dict[str, Any]]) -> str:
    """Entities found in this run's clips of one video; characters come from the graph (after merges)."""
    faces = sorted({f for r in reports for f in r["faces"]})
    voices = sorted({v for r in reports for v in r["voices"]})
    chars = set(graph.characters_of(faces + voices).values()) if faces or voices else set()
    memories = sum(int(r["memories"]) for r in reports)
    created = sum(int(r["new_entities"]) for r in reports)
    return (f"{video_id}: {_n(len(reports), 'clip')} ingested: {_n(len(faces), 'face')}, "
            f"{_n(len(voices), 'voice')}, {_n(len(chars), 'character')}, {_n(memories, 'memory', 'memories')}, "
            f"{_n(created, 'new entity', 'new entities')}")


def graph_totals(graph: Any) -> str:
    counts = graph.counts()
    return (f"graph: {_n(counts.get('Face', 0), 'face')}, {_n(counts.get('Voice', 0), 'voice')}, "
            f"{_n(counts.get('Character', 0), 'character')}, {_n(counts.get('Memory', 0), 'memory', 'memories')}")


class IngestFailed(click.ClickException):
    exit_code = 1


# ---------------------------------------------------------------------------------------------- in-process


def _inprocess(settings: Settings, sources: list[tuple[Path, str]], view: ProgressView,
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


def _failure(video: str, state: tuple[int, int, str, str | None] | None, error: str) -> str:
    if state is None:
        return f"{video}: FAILED before its first clip: {error}"
    index, total, stage, _ = state
    return f"{video}: clip {index + 1}/{total} FAILED at {stage}: {error}"


# ---------------------------------------------------------------------------------------------- entry point


Runner = Callable[..., list[str]]  # (settings, [(source, video id)], view, append=False) -> failed video ids


def run_ingest(settings: Settings, videos: list[Path], live_dir: Path | None, runner: Runner | None,
               video_id: str | None, view: ProgressView | None = None) -> None:
    """Ingests in this process, or with `runner` (`m3graph.tasks.follow.run_celery`: queue and follow workers).

    The Celery runner is passed in rather than imported, so this package never imports `m3graph.tasks`
    (tasks depend on ingestion, one way).
    """
    from m3graph.localserver.server import ensure_server

    ensure_server(settings)
    view = view or ProgressView()
    if not view.tty:
        _quiet_library_bars()
    run = runner or _inprocess
    sources = [(p, video_id or _video_id(p)) for p in videos]
    failed: list[str] = []
    if sources:
        failed += run(settings, sources, view)
    if live_dir is not None:
        failed += _live(settings, live_dir, video_id, run, view)
    if failed:
        raise IngestFailed(f"{_n(len(failed), 'video')} failed: {', '.join(failed)}")


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


def _live(settings: Settings, live_dir: Path, video_id: str | None, run: Any, view: ProgressView) -> list[str]:
    from m3graph.ingest.live import watch_clips

    live_id = video_id or _video_id(live_dir)
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
