"""Background video ingestion whose progress a caller polls: `ingest` returns a job, `ingest_status` reads it.

Why a job and not a blocking call: ingesting a video takes minutes (perception, then memorization), far longer
than a client waits for a tool result. The work itself is injected (`IngestRun`: the front end passes
`m3graph.ingest.runner.run_ingest`, in this process or queued on Celery), so this package never imports
ingestion, which imports the memorizing model. Progress arrives through `JobLog`, a progress sink of its own
with the same four calls as the CLI's terminal view (`update`, `message`, `finish`, `current`); lines are kept
in memory, never written to stdout, which carries the MCP protocol on stdio.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from m3graph.errors import NotFoundError
from m3graph.service.output import one_line
from m3graph.service.results import JobProgress, JobStatus

LOG_LINES = 40  # the last progress lines a status shows


class JobLog:
    """A progress sink that keeps plain lines in memory: per video its clip, stage and detail, and messages."""

    tty = False  # never redraws: plain lines only

    def __init__(self) -> None:
        self.current: dict[str, tuple[int, int, str, str | None]] = {}  # video -> (index, total, stage, detail)
        self._started: dict[str, float] = {}
        self._lines: list[str] = []
        self._lock = threading.Lock()

    def update(self, video: str, index: int, total: int, stage: str, detail: str | None = None) -> None:
        state = (index, total, stage, detail)
        if self.current.get(video) == state:
            return
        self.current[video] = state
        now = time.monotonic()
        elapsed = now - self._started.setdefault(video, now)
        extra = f" ({detail})" if detail else ""
        self._add(f"{video} clip {index + 1}/{total} {stage}{extra}  {elapsed:.1f} s")

    def message(self, text: str, err: bool = False) -> None:
        self._add(("error: " if err else "") + text)

    def finish(self, video: str) -> None:
        """The video is done (its last state stays in `current`)."""

    def lines(self) -> list[str]:
        with self._lock:
            return list(self._lines[-LOG_LINES:])

    def _add(self, text: str) -> None:
        with self._lock:
            self._lines.extend(line for line in text.splitlines() if line.strip())
            del self._lines[:-LOG_LINES]


# (files, live, video id, progress sink): runs one ingestion to its end, raising on failure
IngestRun = Callable[[list[Path], bool, str | None, JobLog], None]


@dataclass
class IngestJob:
    job_id: str
    paths: list[str]
    live: bool
    source_id: str | None
    started: float = field(default_factory=time.time)
    state: str = "running"  # running | watching | done | failed
    error: str | None = None
    finished: float | None = None
    log: JobLog = field(default_factory=JobLog)
    thread: threading.Thread | None = None

    def status(self) -> JobStatus:
        return JobStatus(
            job_id=self.job_id, state=self.state, paths=self.paths, live=self.live, source_id=self.source_id,
            elapsed_s=round((self.finished or time.time()) - self.started, 1), error=self.error,
            videos={vid: JobProgress(clip=index + 1, clips=total, stage=stage, detail=detail)
                    for vid, (index, total, stage, detail) in dict(self.log.current).items()},
            log=self.log.lines())


class IngestJobs:
    """Every ingestion job this process started (kept until it stops)."""

    def __init__(self, run: IngestRun | None = None) -> None:
        self.run = run
        self._jobs: dict[str, IngestJob] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, paths: list[Path], live: bool, source_id: str | None) -> IngestJob:
        if self.run is None:
            raise NotFoundError("this server runs no ingestion (no ingest runner was configured)")
        with self._lock:
            job = IngestJob(f"ingest-{next(self._ids)}", [str(p) for p in paths], live, source_id)
            self._jobs[job.job_id] = job
        if live:
            job.state = "watching"
        job.thread = threading.Thread(target=self._run, args=(job, paths), name=job.job_id, daemon=True)
        job.thread.start()
        return job

    def _run(self, job: IngestJob, paths: list[Path]) -> None:
        assert self.run is not None
        try:
            self.run(paths, job.live, job.source_id, job.log)
        except BaseException as exc:  # noqa: BLE001 - a job's failure is its status, never the server's
            job.state, job.error = "failed", one_line(f"{type(exc).__name__}: {exc}")
        else:
            job.state = "done"
        job.finished = time.time()

    def get(self, job_id: str) -> IngestJob:
        job = self._jobs.get(job_id)
        if job is None:
            known = ", ".join(self._jobs) or "none"
            raise NotFoundError(f"no ingest job {job_id!r} (jobs of this server: {known})")
        return job

    def all(self) -> list[IngestJob]:
        return list(self._jobs.values())
