"""The explorer as the browser tests run it: the real app on a free localhost port, in a thread of the test
process, for the graph a module built (one copy of the start-and-wait loop for every module that needs it)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import uvicorn

from m3graph.embedding import text_embedder
from m3graph.explore import assets
from m3graph.explore.app import create_app
from m3graph.graphdb.store import MemoryGraph
from m3graph.http_guard import allowed_hosts
from m3graph.service import MemoryService


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_explorer(graph: MemoryGraph, token: str, start_timeout_s: float = 30.0) -> Iterator[str]:
    """Yields the explorer's base URL (it needs `token`); stops the server on exit, whatever happened."""
    assets.build()
    embedder = text_embedder(graph.settings)
    port = free_port()
    service = MemoryService(graph.settings, graph, embedder_factory=lambda: embedder)
    app = create_app(service, token, hosts=allowed_hosts("127.0.0.1", port))
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + start_timeout_s
        while not srv.started:
            assert time.monotonic() < deadline, "the explorer did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(10)
