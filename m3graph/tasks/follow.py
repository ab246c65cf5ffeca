"""`m3graph ingest --celery`: queue the videos for the workers and follow them until every clip is memorized.

What a clip is doing comes from the workers' step activity of this submission (`m3graph.tasks.progress`);
whether it is finished comes from the step results recorded there as the steps end (the same transitions the
clips' graph states record). Passed to `m3graph.ingest.runner.run_ingest` as its runner, so the
ingestion package never imports the tasks package.
"""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3graph.ingest.runner import POLL_S, ProgressSink, _failure, _n, graph_totals, summary
from m3graph.settings import Settings


@dataclass
class WorkerJob:
    """One submitted video as the CLI follows it: its chain ends at the last resolve, so progress decides."""

    source_id: str
    indexes: list[int]
    total: int
    result: Any
    finished: bool = False
    errors: list[str] = field(default_factory=list)
    reports: dict[int, dict[str, Any]] = field(default_factory=dict)
    announced: set[int] = field(default_factory=set)  # clips already shown as done


def clip_stage(steps: dict[str, dict[str, Any]]) -> tuple[str, str | None]:
    """The displayed stage of one clip from its steps' states in the progress hash, and a detail/error."""
    for step in ("cut", "faces", "voices", "resolve", "memorize"):
        state = steps.get(step, {})
        if state.get("state") == "failed":
            return "failed", f"{step}: {state.get('error', '?')}"
    memorize, resolve = steps.get("memorize", {}), steps.get("resolve", {})
    if memorize.get("state") == "done":
        return "done", None
    if memorize.get("state") == "retrying":
        return "memorize", f"retrying after {memorize.get('error')}"
    if memorize.get("state") in ("running", "queued"):
        return "memorize", None
    if resolve.get("state") in ("running", "done"):
        return "resolve", None
    if resolve.get("state") == "waiting":
        return "waiting", resolve.get("detail")
    if resolve.get("state") == "retrying":
        return "resolve", f"retrying after {resolve.get('error')}"
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


def poll_job(client: Any, job: WorkerJob, view: ProgressSink) -> None:
    """Reads the job's clips, shows what changed, and marks the job finished (all memorized) or failed.

    A failed step ends the job at once: the chain does not run its later clips after a failure.
    """
    from m3graph.tasks.progress import read_progress

    _, clips = read_progress(client, job.source_id)
    stages = {i: clip_stage(clips.get(i, {})) for i in job.indexes}
    for i in job.indexes:
        if stages[i][0] == "done":
            job.reports[i] = clips[i]["memorize"].get("report") or {}
    # the clip shown is the first one not done (a chain runs its clips in order)
    current = next((i for i in job.indexes if stages[i][0] != "done"), job.indexes[-1] if job.indexes else None)
    if current is not None:
        for i in job.indexes:  # every finished clip is shown once as done, even when polling skipped its stages
            if i < current and stages[i][0] == "done" and i not in job.announced:
                job.announced.add(i)
                view.update(job.source_id, i, job.total, "done")
        view.update(job.source_id, current, job.total, *stages[current])
    failed = [(i, d) for i, (s, d) in stages.items() if s == "failed"]
    if failed:
        job.errors = [f"{job.source_id}: clip {i + 1}/{job.total} FAILED at {d}" for i, d in failed]
    if failed or all(stages[i][0] == "done" for i in job.indexes):
        job.finished = True
    elif job.result.ready() and job.result.failed():  # e.g. a failure the progress hash could not record
        job.finished = True
        job.errors = [f"{job.source_id}: FAILED: {type(job.result.result).__name__}: {job.result.result}"]


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


def run_celery(settings: Settings, sources: list[tuple[Path, str]], view: ProgressSink,
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
                        view.finish(job.source_id)
                        if job.errors:
                            failed.append(job.source_id)
                            for error in job.errors:
                                view.message(error, err=True)
                        else:
                            view.message(summary(graph, job.source_id, [job.reports[i] for i in job.indexes]))
                if not all(j.finished for j in jobs):
                    time.sleep(POLL_S)
            view.message(graph_totals(graph))
    finally:
        client.close()
    return failed
