"""The ingestion an MCP `ingest` job runs: `m3graph.ingest.runner.run_ingest` (the CLI's too), in this process or
queued on Celery.

Why here: the job bookkeeping and its progress sink are the service's (`m3graph.service.jobs`); only the choice of
runner is this front end's (`m3graph mcp --celery`). The sink is the service's `JobLog`, never the CLI's terminal
view, so nothing is written to stdout, which carries the protocol on stdio.
"""

from __future__ import annotations

from pathlib import Path

from m3graph.ingest.runner import Runner, run_ingest
from m3graph.service.jobs import IngestRun, JobLog
from m3graph.settings import Settings


def ingest_runner(settings: Settings, use_celery: bool = False) -> IngestRun:
    """An `IngestRun` for the service's jobs: video files, or with `live` one directory to watch."""

    def run(paths: list[Path], live: bool, source_id: str | None, log: JobLog) -> None:
        runner: Runner | None = None
        if use_celery:
            from m3graph.tasks.follow import run_celery

            runner = run_celery
        videos, live_dir = ([], paths[0]) if live else (paths, None)
        run_ingest(settings, videos, live_dir, runner, source_id, view=log)

    return run
