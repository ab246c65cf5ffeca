"""Search and ask: the memory's own search tools (search_clip / search_node) and the H-round controller.

Results are listed best first (the tools return clips in clip order, for the controller's context). Ask is
offered only when `m3graph explore` found a configured chat model (no model, no box).
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from m3graph.errors import InvalidInputError, M3GraphError
from m3graph.explore import reads
from m3graph.explore.context import Explorer, optional_clip


def best_first(results: list[Any]) -> list[Any]:
    """Highest score first; clips without a score last, in the order they came."""
    return sorted(results, key=lambda r: -r.score if r.score is not None and not math.isnan(r.score) else math.inf)


def register(app: FastAPI, ex: Explorer) -> None:
    graph = ex.graph

    @app.get("/search", response_class=HTMLResponse)
    def search(request: Request, q: str = "", video: str = "", before_clip: str = "", mode: str = "clip") -> Response:
        results: list[Any] = []
        before = optional_clip(before_clip)
        videos = [video] if video else None
        if mode not in ("clip", "node"):
            raise InvalidInputError(f"mode must be 'clip' or 'node', got {mode!r}")
        if q.strip():
            if ex.embed is None:
                raise M3GraphError("search needs a text embedder; start the explorer with one")
            vector = ex.embed(q)
            tool = graph.search.search_node if mode == "node" else graph.search.search_clip
            results = best_first(tool(vector, videos, before, text=q))
        return ex.page(request, "search.html", q=q, video=video, before_clip=before_clip, mode=mode,
                       results=results, videos=reads.videos(graph), trace=None)

    @app.post("/ask", response_class=HTMLResponse)
    async def ask(request: Request) -> Response:
        fields = await ex.form(request)
        question = fields.get("question", "").strip()
        video = fields.get("video", "")
        before_raw = fields.get("before_clip", "")
        before = optional_clip(before_raw)
        if ex.answerer is None:
            raise M3GraphError("asking needs a chat model; configure llm.control and restart the explorer")
        if not question:
            raise InvalidInputError("the question is empty")
        trace = ex.answerer(question, [video] if video else None, before)
        return ex.page(request, "search.html", q=question, video=video, before_clip=before_raw, mode="clip",
                       results=[], videos=reads.videos(graph), trace=trace)
