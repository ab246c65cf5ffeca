"""Video ingestion started from a tool call: a background job whose progress an agent polls.

Why a job and not a blocking call: ingesting a video takes minutes (perception, then memorization), far longer
than a client waits for a tool result. `ingest` returns a job id at once; `ingest_status` reports each video's
clip, stage and the progress lines `m3graph ingest` would print. The work itself is `run_ingest`, the same entry
point as the CLI: in this process (a daemon thread), or queued on Redis for `m3graph worker` processes when the
server was started with `--celery`; only the view differs (lines are kept in memory, never written to stdout,
which carries the protocol on stdio).
"""

from __future__ import annotations

import io
import itertools
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3graph.errors import NotFoundError
from m3graph.ingest.ingest_cli import ProgressView, run_ingest
from m3graph.mcp.output import one_line
from m3graph.settings import Settings

LOG_LINES = 40  # the last progress lines a status shows


class _JobView(ProgressView):
    """The CLI's progress view writing plain lines into memory (never a terminal, never stdout)."""

    def __init__(self) -> None:
        super().__init__(stream=io.StringIO(), tty=False)

    def message(self, text: str, err: bool = False) -> None:  # the CLI's view echoes these to the terminal
        self._write(("error: " if err else "") + text + "\n")

    def lines(self) -> list[str]:
        text = self.stream.getvalue()  # type: ignore[attr-defined]
        return [line for line in text.splitlines() if line.strip()][-LOG_LINES:]


@dataclass
class IngestJob:
    job_id: str
    paths: list[str]
    live: bool
    video_id: str | None
    started: float = field(default_factory=time.time)
    state: str = "running"  # running | watching | done | failed
    error: str | None = None
    finished: float | None = None
    view: _JobView = field(default_factory=_JobView)
    thread: threading.Thread | None = None

    def status(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id, "state": self.state, "paths": self.paths, "live": self.live,
            "video_id": self.video_id, "elapsed_s": round((self.finished or time.time()) - self.started, 1),
            "error": self.error,
            "videos": {vid: {"clip": index + 1, "clips": total, "stage": stage, "detail": detail}
                       for vid, (index, total, stage, detail) in dict(self.view.current).items()},
            "log": self.view.lines(),
        }


class IngestJobs:
    """Every ingestion job this server started (kept until the server stops)."""

    def __init__(self, settings: Settings, use_celery: bool = False) -> None:
        self.settings = settings
        self.use_celery = use_celery
        self._jobs: dict[str, IngestJob] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, paths: list[Path], live: bool, video_id: str | None) -> IngestJob:
        with self._lock:
            job = IngestJob(f"ingest-{next(self._ids)}", [str(p) for p in paths], live, video_id)
            self._jobs[job.job_id] = job
        if live:
            job.state = "watching"
        job.thread = threading.Thread(target=self._run, args=(job, paths), name=job.job_id, daemon=True)
        job.thread.start()
        return job

    def _run(self, job: IngestJob, paths: list[Path]) -> None:
        runner = None
        if self.use_celery:
            from m3graph.tasks.follow import run_celery as runner
        videos, live_dir = ([], paths[0]) if job.live else (paths, None)
        try:
            run_ingest(self.settings, videos, live_dir, runner, job.video_id, view=job.view)
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
