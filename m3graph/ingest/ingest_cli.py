"""What `m3graph ingest` does: run or queue the per-video workflow, show progress per clip and stage, summarise.

Progress comes from the pipeline's callback in-process, and from the workers' progress hash in Redis with
`--celery` (see `m3graph.tasks.ingest`), so both modes print the same lines: the video, a bar, clip i of N,
the stage, the elapsed time. On a terminal one status line is redrawn in place; anywhere else (CI logs, a
pipe) every change is a plain line without control characters. A failed clip is shown with its stage and
error; the other videos go on, and the command exits non-zero at the end.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import click

from m3graph.settings import Settings

BAR_WIDTH = 20
POLL_S = 0.5
# How far through a clip each stage is, for the bar: perception dominates a clip's time.
STAGE_FRACTION = {"queued": 0.0, "cut": 0.05, "faces": 0.15, "voices": 0.15, "faces+voices": 0.15,
                  "perceived": 0.8, "waiting": 0.8, "memorize": 0.85, "done": 1.0, "failed": 0.0}
# Pipeline callback stage -> displayed stage (in-process, faces and voices run together in two threads).
INPROCESS_STAGE = {"perceive": "faces+voices"}


def _video_id(path: Path) -> str:
    stem = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in path.stem)
    return stem.strip("-.") or "video"


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


# ---------------------------------------------------------------------------------------------- celery


@dataclass
class WorkerJob:
    """One submitted chain as the CLI follows it: its result ends only on success, so the progress hash decides."""

    video_id: str
    indexes: list[int]
    total: int
    result: Any
    finished: bool = False
    errors: list[str] = field(default_factory=list)
    reports: dict[int, dict[str, Any]] = field(default_factory=dict)
    announced: set[int] = field(default_factory=set)  # clips already shown as done


def clip_stage(steps: dict[str, dict[str, Any]]) -> tuple[str, str | None]:
    """The displayed stage of one clip from its steps' states in the progress hash, and a detail/error."""
    for step in ("cut", "faces", "voices", "commit"):
        state = steps.get(step, {})
        if state.get("state") == "failed":
            return "failed", f"{step}: {state.get('error', '?')}"
    commit = steps.get("commit", {})
    if commit.get("state") == "done":
        return "done", None
    if commit.get("state") == "running":
        return "memorize", None
    if commit.get("state") == "waiting":
        return "waiting", commit.get("detail")
    if commit.get("state") == "retrying":
        return "memorize", f"retrying after {commit.get('error')}"
    states = {s: steps.get(s, {}).get("state") for s in ("faces", "voices")}
    running = [s for s, st in states.items() if st in ("running", "retrying")]
    if running:
        return "+".join(running), None
    if all(st == "done" for st in states.values()):
        return "perceived", None
    if steps.get("cut", {}).get("state") == "running":
        return "cut", None
    if steps.get("cut", {}).get("state") == "done":
        return "+".join(s for s, st in states.items() if st != "done"), "queued"
    return "queued", None


def poll_job(client: Any, job: WorkerJob, view: ProgressView) -> None:
    """Reads the job's clips from the progress hash, shows what changed, and marks the job finished or failed.

    A failed step ends the job at once: the chain does not run its later clips after a failure, and its
    result would stay pending for ever.
    """
    from m3graph.tasks.ingest import read_progress

    _, clips = read_progress(client, job.video_id)
    stages = {i: clip_stage(clips.get(i, {})) for i in job.indexes}
    for i in job.indexes:
        if stages[i][0] == "done":
            job.reports[i] = clips[i]["commit"].get("report") or {}
    # the clip shown is the first one not done (a chain runs its clips in order)
    current = next((i for i in job.indexes if stages[i][0] != "done"), job.indexes[-1] if job.indexes else None)
    if current is not None:
        for i in job.indexes:  # every finished clip is shown once as done, even when polling skipped its stages
            if i < current and stages[i][0] == "done" and i not in job.announced:
                job.announced.add(i)
                view.update(job.video_id, i, job.total, "done")
        view.update(job.video_id, current, job.total, *stages[current])
    failed = [(i, d) for i, (s, d) in stages.items() if s == "failed"]
    if failed:
        job.errors = [f"{job.video_id}: clip {i + 1}/{job.total} FAILED at {d}" for i, d in failed]
    if failed or all(stages[i][0] == "done" for i in job.indexes):
        job.finished = True
    elif job.result.ready():  # e.g. a failure the progress hash could not record
        job.finished = True
        if job.result.failed():
            job.errors = [f"{job.video_id}: FAILED: {type(job.result.result).__name__}: {job.result.result}"]


def _release(result: Any) -> None:
    """Drops the backend's subscription to a chain's result while Redis is still up.

    Submitting subscribes to the result; one collected at interpreter exit tries to unsubscribe from a server
    that may be gone. A finished chain's result is consumed; a broken chain's (a step failed) never arrives.
    """
    with suppress(Exception):
        if result.ready():
            result.get(timeout=10, propagate=False)
        else:
            result.forget()


def _celery(settings: Settings, sources: list[tuple[Path, str]], view: ProgressView,
            append: bool = False) -> list[str]:
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.tasks.app import configure
    from m3graph.tasks.ingest import plan_source, redis_client, submit_clips

    configure(settings)
    failed: list[str] = []
    jobs: list[WorkerJob] = []
    for source, vid in sources:
        try:
            indexes, total = plan_source(settings, source, vid, append)
        except Exception as exc:  # noqa: BLE001 - bad input fails here, before anything is queued
            view.message(_failure(vid, None, f"{type(exc).__name__}: {exc}"), err=True)
            failed.append(vid)
            continue
        jobs.append(WorkerJob(vid, indexes, total, submit_clips(settings, vid, indexes, total)))
        view.message(f"{vid}: queued {_n(len(indexes), 'clip')} of {total} for the workers")
    client = redis_client(settings)
    try:
        with MemoryGraph.connect(settings) as graph:
            while not all(j.finished for j in jobs):
                for job in jobs:
                    if job.finished:
                        continue
                    poll_job(client, job, view)
                    if job.finished:
                        _release(job.result)
                        view.finish(job.video_id)
                        if job.errors:
                            failed.append(job.video_id)
                            for error in job.errors:
                                view.message(error, err=True)
                        else:
                            view.message(summary(graph, job.video_id, [job.reports[i] for i in job.indexes]))
                if not all(j.finished for j in jobs):
                    time.sleep(POLL_S)
            view.message(graph_totals(graph))
    finally:
        client.close()
    return failed


# ---------------------------------------------------------------------------------------------- entry point


def run_ingest(settings: Settings, videos: list[Path], live_dir: Path | None, use_celery: bool,
               video_id: str | None, view: ProgressView | None = None) -> None:
    from m3graph.graphdb.server import ensure_server

    ensure_server(settings)
    view = view or ProgressView()
    if not view.tty:
        _quiet_library_bars()
    run = _celery if use_celery else _inprocess
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
