"""`ask` under a client's request timeout: the answer runs as a job; the call waits for it while sending progress,
and hands back a job id to poll when the answer takes longer than a client waits.

Why: a controller answer is several rounds of a chat model (74.7 s measured on a laptop for one question), and
common MCP clients give up on a request after 60 s. So `ask` starts a job and waits at most `ASK_WAIT_S` (45 s):

* while it waits, it sends a progress notification every `PROGRESS_EVERY_S` (2 s) when the client asked for
  progress (a `progressToken` in the request's `_meta`): the seconds so far and "answering: 12 s" (clients that
  reset their timeout on progress then wait as long as it takes);
* a job done by then is returned as the whole answer, as before;
* a job still running is returned as an `AskStatus` (`state: "running"`, `job_id`, `next`): the agent calls
  `ask_status(job_id)`, which waits the same way and returns the answer once it is there.

Jobs run one at a time (the service's own lock: a local model answers one question at a time); the last
`KEEP_JOBS` finished ones are kept for polling.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from m3graph.errors import NotFoundError
from m3graph.service.requests import AskRequest
from m3graph.service.results import AskResult
from m3graph.service.tool_results import AskStatus

ASK_WAIT_S = 45.0  # under the 60 s request timeout of common clients, with room for the transport
PROGRESS_EVERY_S = 2.0
KEEP_JOBS = 50

# Sends one progress notification (`Context.report_progress`: progress, total, message); a no-op when the client
# asked for none.
Progress = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass
class AskJob:
    job_id: str
    question: str
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    result: AskResult | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def elapsed_s(self) -> float:
        return round((self.finished or time.monotonic()) - self.started, 1)

    def status(self) -> AskStatus:
        state = "running" if not self.done.is_set() else ("failed" if self.error else "done")
        return AskStatus(job_id=self.job_id, state=state, question=self.question, elapsed_s=self.elapsed_s,
                         answer=self.result, error=str(self.error) if self.error else None,
                         next=f"still answering: call ask_status(job_id='{self.job_id}') for the answer"
                         if state == "running" else None)


class AskJobs:
    """The questions this server is answering or has answered (the last `KEEP_JOBS`)."""

    def __init__(self, answer: Callable[[AskRequest], AskResult]) -> None:
        self._answer = answer
        self._jobs: dict[str, AskJob] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, request: AskRequest) -> AskJob:
        with self._lock:
            job = AskJob(f"ask-{next(self._ids)}", request.question)
            self._jobs[job.job_id] = job
            finished = [j for j in self._jobs.values() if j.done.is_set()]
            for old in finished[:max(0, len(finished) - KEEP_JOBS)]:
                del self._jobs[old.job_id]
        threading.Thread(target=self._run, args=(job, request), name=job.job_id, daemon=True).start()
        return job

    def _run(self, job: AskJob, request: AskRequest) -> None:
        try:
            job.result = self._answer(request)
        except BaseException as exc:  # noqa: BLE001 - a job's failure is its status, never the server's
            job.error = exc
        job.finished = time.monotonic()
        job.done.set()

    def get(self, job_id: str) -> AskJob:
        job = self._jobs.get(job_id)
        if job is None:
            known = ", ".join(self._jobs) or "none"
            raise NotFoundError(f"no ask job {job_id!r} (jobs of this server: {known})")
        return job


async def wait_for(job: AskJob, wait_s: float, progress: Progress) -> AskResult | AskStatus:
    """The job's answer if it is done within `wait_s` (its error raised if it failed), else its running status;
    `progress` is awaited every `PROGRESS_EVERY_S` meanwhile."""
    deadline = time.monotonic() + wait_s
    next_report = time.monotonic()
    while not job.done.is_set() and time.monotonic() < deadline:
        if time.monotonic() >= next_report:
            await progress(job.elapsed_s, None, f"answering: {job.elapsed_s:.0f} s")
            next_report += PROGRESS_EVERY_S
        await anyio.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
    if not job.done.is_set():
        return job.status()
    if job.error is not None:
        raise job.error
    assert job.result is not None
    return job.result


__all__ = ["ASK_WAIT_S", "AskJob", "AskJobs", "Progress", "wait_for"]
