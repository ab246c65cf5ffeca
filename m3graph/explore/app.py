"""The explorer web app: browse sources, clips, characters and the graph, search and ask, correct identities.

Served by the Python process that owns the graph connection (`m3graph explore`), on loopback by default.
Reads go through `m3graph.explore.reads` (named queries, READ sessions); writes are the store's own calls
(`vote_identity`, `undo_vote`, deletions), so a correction made here is the same fact the CLI, MCP and chat
speakers write. Media (face crops, voice snippets, clip cuts) are served only from the data directory.
"""

from __future__ import annotations

import html
import logging
import mimetypes
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from m3graph.errors import M3GraphError, NotFoundError
from m3graph.explore import reads
from m3graph.explore.security import COOKIE, csrf_for, same_origin, token_ok
from m3graph.graphdb.store import MemoryGraph
from m3graph.settings import Settings

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
STATIC = HERE / "static"
GRAPH_BUNDLE = STATIC / "build" / "graph.js"
_CHAR_TAG = re.compile(r"&lt;character_(\d+)&gt;")


def render_memory(text: str) -> Markup:
    """Escaped memory text with each `<character_K>` turned into a link with the character's avatar."""
    escaped = html.escape(text)
    return Markup(_CHAR_TAG.sub(
        lambda m: (f'<a class="char" href="/character/{m.group(1)}"><img class="avatar" alt="" '
                   f'src="/avatar/{m.group(1)}">character_{m.group(1)}</a>'), escaped))


def media_url(uri: str | None) -> str | None:
    return None if not uri else "/media?uri=" + html.escape(uri, quote=True)


def _local_path(uri: str) -> Path:
    if uri.startswith("file://"):
        return Path(unquote(urlsplit(uri).path))
    return Path(uri)


def create_app(settings: Settings, graph: MemoryGraph, token: str,
               answerer: Callable[[str, list[str] | None, int | None], dict[str, Any]] | None = None,
               embed: Callable[[str], list[float]] | None = None) -> FastAPI:
    """The app over one open store. `embed` and `answerer` are lazy so pages that do not search start fast."""
    app = FastAPI(title="m3graph explorer", docs_url=None, redoc_url=None, openapi_url=None)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["memory"] = render_memory
    templates.env.filters["media"] = media_url
    csrf = csrf_for(token)
    data_root = settings.data_dir.resolve()
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Any]) -> Response:
        if request.url.path == "/healthz":  # liveness for compose/orchestrators: says nothing about the graph
            return Response("ok", media_type="text/plain")
        presented = request.query_params.get("token")
        if presented is not None:
            if not token_ok(token, presented):
                return HTMLResponse("wrong token", status_code=401)
            clean = request.url.remove_query_params("token")
            response: Response = RedirectResponse(str(clean.path) + (f"?{clean.query}" if clean.query else ""),
                                                  status_code=303)
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return response
        if not token_ok(token, request.cookies.get(COOKIE)):
            return HTMLResponse("This explorer needs the link with its token that `m3graph explore` printed.",
                                status_code=401)
        if request.method not in ("GET", "HEAD") and not same_origin(
                request.headers.get("origin"), request.headers.get("referer"), request.headers.get("host")):
            return HTMLResponse("cross-origin write refused", status_code=403)
        return await call_next(request)

    @app.exception_handler(NotFoundError)
    async def not_found(request: Request, exc: NotFoundError) -> Response:
        return page(request, "error.html", status_code=404, message=str(exc))

    @app.exception_handler(M3GraphError)
    async def failed(request: Request, exc: M3GraphError) -> Response:
        return page(request, "error.html", status_code=400, message=str(exc))

    def page(request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
        return templates.TemplateResponse(request, name, {"csrf": csrf, **context}, status_code=status_code)

    async def form(request: Request) -> dict[str, str]:
        fields = {k: v[-1] for k, v in parse_qs((await request.body()).decode()).items()}
        if not token_ok(csrf, fields.get("csrf")):
            raise M3GraphError("the form has no valid CSRF field; reload the page")
        return fields

    def back(fields: dict[str, str], default: str) -> RedirectResponse:
        target = fields.get("next") or default
        if not target.startswith("/") or target.startswith("//"):  # only pages of this server
            target = default
        return RedirectResponse(target, status_code=303)

    def integer(fields: dict[str, str], name: str) -> int:
        try:
            return int(fields[name])
        except (KeyError, ValueError):
            raise M3GraphError(f"field {name!r} must be a whole number, got {fields.get(name)!r}") from None

    # -- pages --------------------------------------------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> Response:
        return page(request, "index.html", videos=reads.videos(graph), characters=reads.characters(graph, 200))

    @app.get("/video/{video_id}", response_class=HTMLResponse)
    def video(request: Request, video_id: str) -> Response:
        return page(request, "video.html", video_id=video_id, clips=reads.timeline(graph, video_id))

    @app.get("/clip/{video_id}/{clip_index}", response_class=HTMLResponse)
    def clip(request: Request, video_id: str, clip_index: int) -> Response:
        data = reads.clip(graph, video_id, clip_index)
        faces = [f[0] for f in data["faces"]]
        voices = [v[0] for v in data["voices"]]
        crops = {r["entity_id"]: r["crops"] for r in graph.ex.read("explore/face_crops", ids=faces, per=2)}
        snippets = {r["entity_id"]: r["snippets"] for r in graph.ex.read("explore/voice_snippets", ids=voices,
                                                                           per=2)}
        has_video = bool(data["uri"]) and _servable(data["uri"]) is not None
        return page(request, "clip.html", clip=data, crops=crops, snippets=snippets, has_video=has_video)

    @app.get("/character/{char_id}", response_class=HTMLResponse)
    def character(request: Request, char_id: int) -> Response:
        view = reads.character(graph, char_id)
        if view.char_id != char_id:  # an alias: show the surviving character under its own id
            return RedirectResponse(f"/character/{view.char_id}", status_code=303)
        history = graph.vote_history(char_id=view.char_id)
        return page(request, "character.html", c=view, history=history)

    @app.get("/search", response_class=HTMLResponse)
    def search(request: Request, q: str = "", video: str = "", before_clip: str = "", mode: str = "clip") -> Response:
        results: list[Any] = []
        before = int(before_clip) if before_clip.strip().lstrip("-").isdigit() else None
        videos = [video] if video else None
        if q.strip():
            if embed is None:
                raise M3GraphError("search needs a text embedder; start the explorer with one")
            vector = embed(q)
            if mode == "node":
                results = graph.search.search_node(vector, videos, before, text=q)
            else:
                results = graph.search.search_clip(vector, videos, before, text=q)
        return page(request, "search.html", q=q, video=video, before_clip=before_clip, mode=mode, results=results,
                    videos=reads.videos(graph), trace=None)

    @app.post("/ask", response_class=HTMLResponse)
    async def ask(request: Request) -> Response:
        fields = await form(request)
        question = fields.get("question", "").strip()
        video = fields.get("video", "")
        before_raw = fields.get("before_clip", "")
        before = int(before_raw) if before_raw.strip().lstrip("-").isdigit() else None
        if answerer is None:
            raise M3GraphError("asking needs a chat model; start the explorer with one")
        if not question:
            raise M3GraphError("the question is empty")
        trace = answerer(question, [video] if video else None, before)
        return page(request, "search.html", q=question, video=video, before_clip=before_raw, mode="clip",
                    results=[], videos=reads.videos(graph), trace=trace)

    @app.get("/graph/{video_id}", response_class=HTMLResponse)
    def graph_page(request: Request, video_id: str, start: int = 0, end: int | None = None,
                   max_nodes: int = reads.MAX_GRAPH_NODES) -> Response:
        reads.timeline(graph, video_id)  # 404 for an unknown source
        src = f"/api/graph/{video_id}?start={start}&max_nodes={max_nodes}" + ("" if end is None else f"&end={end}")
        return page(request, "graph.html", video_id=video_id, src=src, bundle=GRAPH_BUNDLE.is_file())

    @app.get("/api/graph/{video_id}")
    def graph_json(video_id: str, start: int = 0, end: int | None = None,
                   max_nodes: int = reads.MAX_GRAPH_NODES) -> JSONResponse:
        view = reads.neighbourhood(graph, video_id, start, end, max(1, min(max_nodes, reads.MAX_GRAPH_NODES)))
        return JSONResponse(view.to_dict())

    # -- corrections --------------------------------------------------------------------------------------------
    @app.post("/vote")
    async def vote(request: Request) -> Response:
        fields = await form(request)
        verdict = fields.get("verdict")
        if verdict not in ("same", "different"):
            raise M3GraphError(f"verdict must be 'same' or 'different', got {verdict!r}")
        graph.vote_identity(integer(fields, "a"), integer(fields, "b"), verdict,
                            note=fields.get("note") or "explorer")
        return back(fields, "/")

    @app.post("/vote/undo")
    async def undo(request: Request) -> Response:
        fields = await form(request)
        graph.undo_vote(integer(fields, "vote_id"))
        return back(fields, "/")

    @app.get("/delete/{kind}/{ident:path}", response_class=HTMLResponse)
    def confirm_delete(request: Request, kind: str, ident: str) -> Response:
        if kind not in ("clip", "video", "character"):
            raise NotFoundError(f"nothing of kind {kind!r} can be deleted")
        return page(request, "delete.html", kind=kind, ident=ident)

    @app.post("/delete")
    async def delete(request: Request) -> Response:
        fields = await form(request)
        if fields.get("confirm") != "yes":
            raise M3GraphError("deletion needs the confirmation box ticked")
        kind, ident = fields.get("kind", ""), fields.get("ident", "")
        if kind == "character":
            graph.delete_character(int(ident))
        elif kind == "video":
            graph.delete_video(ident)
        elif kind == "clip":
            video_id, _, index = ident.rpartition("/")
            graph.delete_clip(video_id, int(index))
        else:
            raise M3GraphError(f"nothing of kind {kind!r} can be deleted")
        log.info("explorer deleted %s %s", kind, ident)
        return RedirectResponse("/", status_code=303)

    # -- media ---------------------------------------------------------------------------------------------------
    def _servable(uri: str) -> Path | None:
        path = _local_path(uri).resolve()
        if not path.is_file() or not path.is_relative_to(data_root):
            return None
        return path

    @app.get("/media")
    def media(uri: str) -> Response:
        path = _servable(uri)
        if path is None:
            return Response("not a media file of this memory", status_code=404)
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return FileResponse(path, media_type=kind)

    @app.get("/avatar/{char_id}")
    def avatar(char_id: int) -> Response:
        try:
            view = reads.character(graph, char_id, crops_per_face=1, snippets_per_voice=0, memory_limit=0)
        except NotFoundError:
            view = None
        for crops in (view.crops.values() if view else []):
            for crop in crops:
                path = _servable(crop["uri"])
                if path is not None:
                    return FileResponse(path, media_type=mimetypes.guess_type(path.name)[0] or "image/jpeg")
        hue = (char_id * 47) % 360
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32"><rect width="32" height="32" '
               f'rx="16" fill="hsl({hue},55%,55%)"/><text x="16" y="21" font-size="13" text-anchor="middle" '
               f'fill="#fff" font-family="sans-serif">{char_id}</text></svg>')
        return Response(svg, media_type="image/svg+xml")

    return app
