"""The scratch Neo4j a benchmark starts for itself (or the running server at `--uri`), shared by the entry points.

Why: each benchmark that wipes its database needs the same guard: its home folder holds a marker file it wrote,
so a mistyped `--home` pointing at someone's graph is refused instead of deleted; the folder is emptied before the
run and removed after it. One function keeps the guard the same everywhere.
"""

from __future__ import annotations

import argparse
import shutil

from bench.run import REPO
from bench.smoke import server_settings
from m3graph.localserver.server import LocalNeo4j
from m3graph.settings import LocalServer, Settings


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
