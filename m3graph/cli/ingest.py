"""`m3graph ingest`: run or queue the per-video workflow and show progress per clip and stage, then a summary.

Progress comes from the pipeline's callback in-process, and with `--celery` from `m3graph.tasks.follow` (the
workers' step activity), so both modes print the same lines: the video, a bar, clip i of N, the stage, the
elapsed time. On a terminal one status line is redrawn in place; anywhere else (CI logs, a pipe) every change
is a plain line without control characters. A failed clip is shown with its stage and error; the other videos
go on, and the command exits non-zero at the end. The run itself is `m3graph.ingest.runner` (shared with the
MCP server's ingestion jobs); this module is only its terminal view and its options.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import IO

import click

from m3graph.ingest.runner import IngestFailed, Runner, run_ingest
from m3graph.service import check_source_id
from m3graph.settings import Settings

BAR_WIDTH = 20
# How far through a clip each stage is, for the bar: perception dominates a clip's time.
STAGE_FRACTION = {"queued": 0.0, "cut": 0.05, "faces": 0.15, "voices": 0.15, "faces+voices": 0.15,
                  "perceived": 0.8, "waiting": 0.8, "resolve": 0.8, "memorize": 0.85, "done": 1.0, "failed": 0.0}
# Pipeline callback stage -> displayed stage (in-process, faces and voices run together in two threads).
INPROCESS_STAGE = {"perceive": "faces+voices"}


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


class IngestFailedExit(click.ClickException):
    """Exit status 1 with the failed videos named (each was shown with its clip and stage as it failed)."""

    exit_code = 1


@click.command()
@click.argument("videos", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--live", "live_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also ingest clips as they appear in this directory (Ctrl-C to stop).")
@click.option("--celery/--in-process", "use_celery", default=False, show_default=True,
              help="Queue on Redis for `m3graph worker` processes, or run in this process.")
@click.option("--video-id", "source_id", default=None, help="Id for a single video (default: the file name stem).")
@click.pass_obj
def ingest(settings: Settings, videos: tuple[Path, ...], live_dir: Path | None, use_celery: bool,
           source_id: str | None) -> None:
    """Ingest videos: 30 s clips -> faces and voices -> entities -> memories, with progress per clip."""
    if not videos and live_dir is None:
        raise click.UsageError("give at least one VIDEO or --live DIR")
    if source_id and len(videos) > 1:
        raise click.UsageError("--video-id names one video: give one VIDEO (or only --live)")
    if source_id is not None:
        check_source_id(source_id)
    runner: Runner | None = None
    if use_celery:
        from m3graph.tasks.follow import run_celery

        runner = run_celery
    try:
        run_ingest(settings, list(videos), live_dir, runner, source_id, view=ProgressView())
    except IngestFailed as exc:
        raise IngestFailedExit(str(exc)) from None


__all__ = ["ProgressView", "ingest"]
