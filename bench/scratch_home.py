"""The scratch Neo4j a benchmark starts for itself (or the running server at `--uri`), shared by the entry points.

Why: each benchmark that wipes its database needs the same guard: its home folder holds a marker file it wrote,
so a mistyped `--home` pointing at someone's graph is refused instead of deleted; the folder is emptied before the
run and removed after it. One function keeps the guard the same everywhere.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.run import REPO, git_state
from bench.smoke import server_settings
from m3graph.graphdb.store import MemoryGraph
from m3graph.localserver.server import LocalNeo4j, ensure_server
from m3graph.settings import LocalServer, Settings

log = logging.getLogger("bench.scratch_home")
SERVER_PID: list[int | None] = [None]  # the scratch server's pid once started, for server CPU readings
Measure = Callable[[MemoryGraph, str, Path, str], dict[str, Any]]


def scratch_server(args: argparse.Namespace, marker: str, what: str) -> tuple[Settings, LocalNeo4j | None]:
    """Settings and the local server (None with `--uri`) for `args.home`, emptied; `what` names the benchmark
    in the refusal and in the marker file. `args` has home, port, heap_mb, pagecache_mb and uri."""
    local = LocalServer(home=args.home, port=args.port, heap_mb=args.heap_mb, pagecache_mb=args.pagecache_mb,
                        build_dir=REPO / ".m3graph" / "launcher-build", startup_timeout_s=600)
    settings = server_settings(args.uri, local)  # never an exported NEO4J_URI: only --uri names another server
    server = LocalNeo4j(settings) if settings.uses_local_server else None
    if server is not None:
        if args.home.exists():
            if not (args.home / marker).exists() and any(args.home.iterdir()):
                raise SystemExit(f"error: {args.home} is not a {what} home ({marker} missing); choose --home")
            server.stop()
            shutil.rmtree(args.home)
        args.home.mkdir(parents=True)
        (args.home / marker).write_text(f"created by {what}; deleted by it\n")
    return settings, server


def run_on_scratch(args: argparse.Namespace, marker: str, what: str, files: Mapping[str, Path],
                   measure: Measure) -> dict[str, Any]:
    """Starts the scratch server (`scratch_server`), runs `measure(graph, name, path, tag)` on each workload file,
    writes `{"meta", "results"}` to `args.out` (when given) even after a failure, then stops the server and removes
    its home. Why one runner: the write benchmarks that compare an earlier and the current path (ingest_throughput,
    session_writes) share the server's lifetime, the load readings and the report file; `SERVER_PID` is set
    while they run, so `server_cpu_s` can read the server's CPU time."""
    settings, server = scratch_server(args, marker, what)
    tag = f"{int(time.time())}"
    result: dict[str, Any] = {"meta": {"git": git_state(), "args": {k: str(v) for k, v in vars(args).items()},
                                       "loadavg_start": os.getloadavg(), "cpus": os.cpu_count()}, "results": []}
    try:
        status = ensure_server(settings)
        SERVER_PID[0] = status.pid if status is not None else None
        with MemoryGraph.connect(settings) as graph:
            for name, path in files.items():
                log.info("measuring %s (%s)", name, path)
                result["results"].append(measure(graph, name, path, tag))
        result["meta"]["loadavg_end"] = os.getloadavg()
    finally:
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
        if server is not None:
            server.stop()
            shutil.rmtree(args.home, ignore_errors=True)
    return result
