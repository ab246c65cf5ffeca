"""End-to-end clip throughput through real Celery workers, for `bench.perception`.

Everything is the benchmark's own: a `redis-server` on a free port, a local Neo4j on `--port` with its home in
the scratch directory (so nobody else's graph is touched and nobody else's data is counted), and one
`m3graph worker -c N` process per concurrency, started exactly as `tests/e2e/test_celery_worker.py` starts its
worker (environment only). A repeat submits every test video at once under fresh ids (nothing cached, nothing
already done) and ends when every chain has finished; per-task seconds come from the worker's own log lines.
"""

from __future__ import annotations

import gc
import logging
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from m3graph.settings import LocalServer, Settings

REPO = Path(__file__).resolve().parents[1]
log = logging.getLogger("bench.perception")
TASK_LINE = re.compile(r"Task (m3graph\.ingest\.\w+)\[[^\]]+\] succeeded in ([0-9.]+)s")
JOB_TIMEOUT_S = 1800


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


@contextmanager
def redis_server(work: Path) -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        raise SystemExit("redis-server is not installed (scripts/setup.sh installs the Debian package)")
    port = _free_port()
    work.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(work)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while not _port_open(port):
            if time.monotonic() > deadline:
                raise SystemExit("redis-server did not start")
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def neo4j_server(home: Path, port: int) -> Iterator[Settings]:
    """A local Neo4j of the benchmark's own (fresh home); refuses a port someone else is using."""
    from m3graph.localserver.server import LocalNeo4j, ensure_server

    if _port_open(port):
        raise SystemExit(f"port {port} is in use; pass another --port for the benchmark's own Neo4j")
    local = LocalServer(home=home, port=port, heap_mb=1024, pagecache_mb=512,
                        build_dir=REPO / ".m3graph" / "launcher-build")
    settings = Settings(neo4j_uri=None, local=local)
    ensure_server(settings)
    try:
        yield settings.model_copy(update={"neo4j_uri": settings.bolt_uri})
    finally:
        LocalNeo4j(settings).stop()


@contextmanager
def worker(settings: Settings, concurrency: int, logfile: Path,
           extra_env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))}
    env.update({"NEO4J_URI": settings.bolt_uri, "M3GRAPH_TASKS__REDIS_URL": settings.tasks.redis_url,
                "M3GRAPH_DATA_DIR": str(settings.data_dir), "OMP_WAIT_POLICY": "PASSIVE", **(extra_env or {})})
    with logfile.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "m3graph.cli", "worker", "-c", str(concurrency)], env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def _wait_ready(app: Any, proc: subprocess.Popen[bytes], timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the worker exited with {proc.returncode}")
        if app.control.ping(timeout=1.0):
            return
        time.sleep(0.5)
    raise RuntimeError("the worker did not answer a ping")


def _run_batch(settings: Settings, media: Any, videos: list[str], suffix: str) -> dict[str, Any]:
    """Submits every video under `<video>-<suffix>` at once and waits for all; wall seconds and clip counts."""
    from m3graph.tasks.ingest import submit_video

    t0 = time.perf_counter()
    jobs = [(vid, *submit_video(settings, media.path(vid), f"{vid}-{suffix}")) for vid in videos]
    for _, result, _ in jobs:
        result.get(timeout=JOB_TIMEOUT_S, propagate=True)
    wall = time.perf_counter() - t0
    clips = sum(total for _, _, total in jobs)
    result = None
    jobs.clear()
    gc.collect()  # results unsubscribe when collected: now, while Redis is up, not at interpreter exit
    media_s = sum(media.video(vid).duration_s for vid in videos)
    return {"wall_s": wall, "clips": clips, "media_s": media_s, "clips_per_min": clips / wall * 60,
            "rtf": wall / media_s, "loadavg": [round(x, 2) for x in os.getloadavg()]}


def _task_seconds(logfile: Path, offset: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    text = logfile.read_bytes()[offset:].decode("utf-8", "replace")
    for m in TASK_LINE.finditer(text):
        out[m.group(1).rsplit(".", 1)[-1]].append(float(m.group(2)))
    return dict(out)


def bench_workers(media: Any, videos: list[str], concurrencies: list[int], repeats: int, port: int, work: Path,
                  save: Callable[[], None], into: dict[str, Any], memorizer: str = "perception") -> dict[str, Any]:
    """Throughput per worker concurrency (medians over `repeats`) and the ratio of each to the first.

    `memorizer="perception"` pins the deterministic perception memorizer in the workers, so the figures are
    about perception and the pipeline; "configured" uses whatever the settings choose (a chat model by default).
    """
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.reasoning.memorize import make_memorizer
    from m3graph.tasks.app import configure

    extra_env = {"M3GRAPH_LLM__MEMORIZE__BACKEND": "none"} if memorizer == "perception" else {}
    pinned = {"llm": {"memorize": {"backend": "none"}}} if extra_env else {}
    probe = Settings(neo4j_uri=None, **pinned)  # type: ignore[arg-type]
    rec: dict[str, Any] = {"videos": videos, "repeats": repeats, "runs": {}, "worker_env": extra_env,
                           "memorizer": make_memorizer(probe).name}
    into["celery"] = rec
    with redis_server(work / "redis") as redis_url, neo4j_server(work / "neo4j", port) as base:
        for c in concurrencies:
            settings = base.model_copy(update={
                "data_dir": work / f"data-c{c}",
                "tasks": base.tasks.model_copy(update={"redis_url": redis_url})})
            app = configure(settings)
            logfile = work / f"worker-c{c}.log"
            run: dict[str, Any] = {"concurrency": c, "batches": []}
            rec["runs"][str(c)] = run
            with worker(settings, c, logfile, extra_env) as proc:
                t0 = time.perf_counter()
                _wait_ready(app, proc)
                run["worker_ready_s"] = time.perf_counter() - t0
                log.info("celery -c %d: warm-up (model loading in every worker process)", c)
                run["warmup"] = _run_batch(settings, media, videos, f"warm-c{c}")
                for r in range(repeats):
                    offset = logfile.stat().st_size
                    batch = _run_batch(settings, media, videos, f"c{c}-r{r}")
                    time.sleep(1.0)  # the worker logs a task's line just after its result is stored
                    batch["task_s"] = {k: sum(v) for k, v in _task_seconds(logfile, offset).items()}
                    run["batches"].append(batch)
                    log.info("celery -c %d repeat %d: %d clips in %.1f s (%.2f clips/min, RTF %.2f), load %s", c, r,
                             batch["clips"], batch["wall_s"], batch["clips_per_min"], batch["rtf"], batch["loadavg"])
                    save()
                if proc.poll() is not None:
                    raise RuntimeError("the worker died during the benchmark")
            with MemoryGraph.connect(settings) as graph:
                done = [r["status"] for vid in videos for r in graph.ex.read("graph/video_progress",
                                                                             source_id=f"{vid}-c{c}-r0")]
            run["statuses_r0"] = done
            batches = run["batches"]
            run["median"] = {k: statistics.median(b[k] for b in batches) for k in ("wall_s", "clips_per_min", "rtf")}
            run["median"]["task_s"] = {k: statistics.median(b["task_s"].get(k, 0.0) for b in batches)
                                       for k in ("cut", "faces", "voices", "commit")}
            save()
    first = rec["runs"][str(concurrencies[0])]["median"]["clips_per_min"]
    rec["throughput_ratio"] = {c: run["median"]["clips_per_min"] / first for c, run in rec["runs"].items()}
    return rec
