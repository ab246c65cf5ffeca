"""Where the `RETURN 1` floor goes: `python -m bench.return1_floor [--n 400] [--line 2026|5.26] [--port 7718]`.

Every graph figure in docs/benchmarks.md sits on one driver round trip. This script times the same trivial
statement through each layer the product can use, side by side in one run against its own local server, so
the differences are the cost of that layer: a raw TCP echo on loopback (the physical floor), the driver's
`execute_query` (a session, a managed transaction and the bookmark manager per call), the same without the
bookmark manager and routed as a read, an auto-commit `session.run` in a reused session, a managed read
transaction in a reused session, and a new session per call. Medians and p95 in ms, with the load average.
`--uri URI` times a running server instead of starting one; `--smoke` is the CI size (20 calls per layer).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import neo4j
from neo4j import GraphDatabase, RoutingControl

from bench.smoke import add_smoke, add_uri, apply_smoke
from m3graph.localserver.server import LocalNeo4j
from m3graph.settings import LocalServer, Settings


def _echo_server() -> tuple[int, Callable[[], None]]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    stop = threading.Event()

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while not stop.is_set():
                data = conn.recv(64)
                if not data:
                    return
                conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()

    def close() -> None:
        stop.set()
        srv.close()

    return srv.getsockname()[1], close


def _time(fn: Callable[[], object], n: int) -> dict[str, float]:
    for _ in range(min(50, n)):  # warm-up: connection pool, query cache, JIT
        fn()
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return {"p50_ms": round(statistics.median(samples), 3), "p95_ms": round(samples[int(0.95 * len(samples))], 3)}


def measure(uri: str, auth: tuple[str, str], database: str, n: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    port, close = _echo_server()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def echo() -> None:
            sock.sendall(b"x" * 16)
            sock.recv(64)

        out["tcp_echo_loopback"] = _time(echo, n)
    close()
    with GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF") as driver:
        driver.verify_connectivity()
        out["execute_query_default"] = _time(lambda: driver.execute_query("RETURN 1", database_=database), n)
        out["execute_query_read_no_bookmarks"] = _time(
            lambda: driver.execute_query("RETURN 1", database_=database, routing_=RoutingControl.READ,
                                         bookmark_manager_=None), n)
        with driver.session(database=database) as session:
            out["session_run_reused"] = _time(lambda: session.run("RETURN 1").consume(), n)

            def managed(tx: neo4j.ManagedTransaction) -> object:
                return tx.run("RETURN 1").consume()

            out["execute_read_reused_session"] = _time(lambda: session.execute_read(managed), n)

        def new_session() -> None:
            with driver.session(database=database) as session:
                session.run("RETURN 1").consume()

        out["session_per_call"] = _time(new_session, n)

        def no_db_name() -> None:  # without database=, the driver first asks the server for the home database
            with driver.session() as session:
                session.run("RETURN 1").consume()

        out["session_per_call_no_database"] = _time(no_db_name, n)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.return1_floor", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=400)
    p.add_argument("--line", choices=["2026", "5.26"], default="2026")
    p.add_argument("--port", type=int, default=7718)
    p.add_argument("--out", type=Path, default=None)
    add_uri(p)
    add_smoke(p, "20 calls per layer")
    args = apply_smoke(p.parse_args(argv), n=20)
    if args.uri:
        settings = Settings(neo4j_uri=args.uri)
        auth = (settings.neo4j_user, settings.neo4j_password.get_secret_value())
        with GraphDatabase.driver(args.uri, auth=auth) as driver:
            version = driver.get_server_info().agent
        result = {"neo4j": version, "uri": args.uri, "loadavg_before": os.getloadavg(), "n": args.n,
                  "layers": measure(args.uri, auth, settings.neo4j_database, args.n),
                  "loadavg_after": os.getloadavg()}
    else:
        result = own_server(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")


def own_server(args: argparse.Namespace) -> dict[str, Any]:
    """The layers against a fresh local server of the chosen line, started and stopped here."""
    with tempfile.TemporaryDirectory(prefix="m3graph-floor-") as home:
        local = LocalServer(home=Path(home) / "neo4j", port=args.port, heap_mb=1024, pagecache_mb=256,
                            neo4j_version=args.line, build_dir=Path(".m3graph/launcher-build"))
        settings = Settings(local=local)
        server = LocalNeo4j(settings)
        server.build()
        status = server.start()
        try:
            auth = (settings.neo4j_user, settings.neo4j_password.get_secret_value())
            result = {
                "neo4j": status.neo4j_version,
                "loadavg_before": os.getloadavg(),
                "n": args.n,
                "layers": measure(server.bolt_uri, auth, settings.neo4j_database, args.n),
                "loadavg_after": os.getloadavg(),
            }
        finally:
            server.stop()
    return result


if __name__ == "__main__":
    main()
