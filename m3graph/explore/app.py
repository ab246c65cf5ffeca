"""The explorer web app: browse sources, clips, characters and the graph, search and ask, correct identities.

Served by the Python process that owns the graph connection (`m3graph explore`), on loopback by default. This
module only assembles the app: the front door (`guard`: Host, token, same-origin writes, security headers), the
error pages, and the route modules, each named for what its pages do (`pages`, `search`, `corrections`,
`media`, `files`). Reads and writes go through the application service (`m3graph.service.MemoryService`), as the CLI's
and the MCP server's do.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from m3graph.errors import M3GraphError, NotFoundError
from m3graph.explore import corrections, files, guard, media, pages, search
from m3graph.explore.context import HERE, Explorer, make_templates
from m3graph.explore.security import csrf_for
from m3graph.service import MemoryService

STATIC = HERE / "static"


def suggestions(ex: Explorer, request: Request) -> list[tuple[str, str]]:
    """What a 404 offers instead: the closest source ids to an unknown source, the closest names to an unknown
    person (links and their text)."""
    params = request.path_params
    source_id = params.get("source_id")
    if isinstance(source_id, str):
        known = ex.reads.closest_sources(source_id)
        if source_id not in known:
            return [(f"/video/{quote(v, safe='')}", v) for v in known]
        return []
    wanted = params.get("char_id", request.query_params.get("name") if request.url.path == "/person" else None)
    if wanted is None:
        return []
    return [(f"/character/{c.char_id}", c.label) for c in ex.reads.closest_people(str(wanted))]


def create_app(service: MemoryService, token: str, *, hosts: Sequence[str] | None, can_ask: bool = False
               ) -> FastAPI:
    """The app over one service (and its open store).

    `hosts`: the Host header values it answers to (`m3graph.http_guard.allowed_hosts` of the bound address);
    None only behind a proxy that checks them itself. `can_ask`: whether to offer Ask (the service then needs
    its controller factory). The service loads its models lazily, so pages that do not search start fast.
    """
    app = FastAPI(title="m3graph explorer", docs_url=None, redoc_url=None, openapi_url=None)
    ex = Explorer(service=service, token=token, csrf=csrf_for(token), templates=make_templates(), can_ask=can_ask)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    guard.install(app, token, hosts)

    @app.exception_handler(NotFoundError)
    async def not_found(request: Request, exc: NotFoundError) -> Response:
        return ex.page(request, "error.html", status_code=404, message=str(exc),
                       suggestions=suggestions(ex, request), title="Not found")

    @app.exception_handler(RequestValidationError)
    async def unusable(request: Request, exc: RequestValidationError) -> Response:
        where = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in exc.errors())
        return ex.page(request, "error.html", status_code=422, message=f"unusable request: {where}")

    @app.exception_handler(UnicodeError)
    async def undecodable(request: Request, exc: UnicodeError) -> Response:
        # Any route that reads bytes as text (a form, a query): bad bytes are the client's error, not a 500.
        return ex.page(request, "error.html", status_code=400, message="the request is not UTF-8 text")

    @app.exception_handler(M3GraphError)
    async def failed(request: Request, exc: M3GraphError) -> Response:
        return ex.page(request, "error.html", status_code=400, message=str(exc))

    for module in (pages, search, corrections, media, files):
        module.register(app, ex)
    return app
