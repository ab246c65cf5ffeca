"""Bad bytes are the client's error (issue 37, item 9): every POST route of the explorer and the MCP HTTP endpoint
answer a body that is not UTF-8, a form or JSON that cannot be read, or JSON nested too deep, with a 4xx and a
message that says so, never a 500 (nor a traceback in the server's log). The routes are enumerated from the apps
themselves, so a route added later is covered without editing this test.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from fastapi.routing import APIRoute
from pydantic import SecretStr
from starlette.routing import Route

from m3graph.explore.app import create_app
from m3graph.explore.security import csrf_for
from m3graph.graphdb.store import MemoryGraph
from m3graph.mcp.server import build_server
from m3graph.mcp.service import McpService
from m3graph.service import MemoryService
from tests.e2e.test_mcp import TOKEN as MCP_TOKEN
from tests.e2e.test_mcp import (  # noqa: F401 - test_mcp's module fixtures, instantiated for this module
    chat_model,
    demo,
    env,
    http_server,
    workdir,
)
from tests.helpers.explorer import running_explorer

TOKEN = "bad-bytes-test-token"
CSRF = csrf_for(TOKEN).encode()
# (what, body): each is unusable as a form; the valid CSRF field comes first, so only the bytes are wrong.
FORMS = [
    ("raw bytes that are not UTF-8", b"csrf=" + CSRF + b"&a=\xff\xfe&b=1&verdict=same"),
    ("a lone continuation byte", b"csrf=" + CSRF + b"&note=caf\xa9"),
    ("percent-escaped bytes that are not UTF-8", b"csrf=" + CSRF + b"&a=%ff%fe&b=1&verdict=same"),
    ("only bad bytes", b"\xff\xfe\xfd\x00\x80"),
    ("more fields than any form has", b"csrf=" + CSRF + b"".join(b"&f%d=1" % i for i in range(500))),
]
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "Authorization": f"Bearer {MCP_TOKEN}"}
_INIT = (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
         b'"capabilities": {}, "clientInfo": {"name": "t", "version": "%s"}}}')
JSON_BODIES = [
    ("raw bytes that are not UTF-8", b"\xff\xfe{\"jsonrpc\": \"2.0\"}"),
    ("a string that is not UTF-8", _INIT % b"\xff\xfe"),
    ("an escaped lone surrogate", _INIT % b"\\ud800"),
    ("truncated JSON", _INIT[:40]),
    ("JSON nested 100000 deep", b"[" * 100_000 + b"]" * 100_000),
    ("not JSON-RPC", b'{"hello": "world"}'),
]


def _concrete(path: str) -> str:
    """A route path with every parameter filled ("/x/{id}" -> "/x/0")."""
    return re.sub(r"\{[^}]+\}", "0", path)


def _post_paths(routes: list[object]) -> list[str]:
    """The paths that take a POST: a route naming POST, or an ASGI endpoint that takes every method (methods None:
    the MCP SDK's /mcp)."""
    return sorted(_concrete(r.path) for r in routes
                  if isinstance(r, APIRoute | Route) and (r.methods is None or "POST" in r.methods))


@pytest.fixture(scope="module")
def explorer(memory_graph: MemoryGraph) -> Iterator[tuple[str, list[str]]]:
    app = create_app(MemoryService(memory_graph.settings, memory_graph), TOKEN, hosts=None)
    with running_explorer(memory_graph, TOKEN) as url:
        yield url, _post_paths(app.routes)


def test_every_explorer_post_route_answers_bad_bytes_with_400(explorer: tuple[str, list[str]],
                                                              memory_graph: MemoryGraph) -> None:
    url, paths = explorer
    assert {"/vote", "/vote/undo", "/fact/correct", "/delete", "/ask"} <= set(paths), paths
    before = memory_graph.counts()
    for path in paths:
        for what, body in FORMS:
            r = requests.post(f"{url}{path}", data=body, cookies={"m3graph_explore": TOKEN},
                              headers={"Origin": url, "Content-Type": "application/x-www-form-urlencoded"},
                              timeout=60, allow_redirects=False)
            assert r.status_code == 400, (path, what, r.status_code, r.text[:300])
            assert re.search(r"not UTF-8|unusable form", r.text), (path, what, r.text[:300])
    assert memory_graph.counts() == before


def test_the_mcp_http_endpoint_answers_bad_bytes_with_400(http_server: str, demo: MemoryGraph,  # noqa: F811
                                                          workdir: Path) -> None:  # noqa: F811
    service = McpService(demo.settings, demo)
    app = build_server(service, allow_writes=True, token=SecretStr(MCP_TOKEN),
                       http=("127.0.0.1", 1)).streamable_http_app()
    paths = _post_paths(app.routes)
    assert "/mcp" in paths, paths
    base = http_server.removesuffix("/mcp")
    for path in paths:
        for what, body in JSON_BODIES:
            r = requests.post(f"{base}{path}", data=body, headers=MCP_HEADERS, timeout=60)
            assert 400 <= r.status_code < 500, (what, r.status_code, r.text[:300])
            assert "error" in r.text.lower(), (what, r.text[:300])
    assert requests.post(http_server, data=_INIT % b"1", headers=MCP_HEADERS, timeout=60).status_code == 200
    log = (workdir / "http.log").read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log, log[-3000:]
