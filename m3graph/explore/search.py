"""Search and ask: the service's search (the one every front end runs) and the H-round controller.

The clips are the service's, for the same question the CLI, MCP and controller find the same ones
(tests/test_explorer_agrees.py); `<character_K>` in the query scopes the search to that person, and since/until
to a time window. The page lists them best first: the service keeps the tools' clip order (the controller reads
evidence in time order), an analyst scans for the best match. Ask is offered only when `m3graph explore` found a
configured chat model (no model, no box).
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from m3graph.errors import InvalidInputError
from m3graph.explore.context import Explorer, blank_none
from m3graph.graphdb.tags import is_equivalence
from m3graph.graphdb.types import ClipResult
from m3graph.service import AskRequest, ListVideosRequest, SearchRequest


def best_first(results: list[ClipResult]) -> list[ClipResult]:
    """The clips the other front ends show (their `Equivalence:` lines left out, a clip with nothing else
    dropped, as `MemoryService.search` does), highest score first; clips without a score last."""
    shown = [r.model_copy(update={"memories": kept}) for r in results
             if (kept := [m for m in r.memories if not is_equivalence(m.raw_text)])]
    return sorted(shown, key=lambda r: -r.score if r.score is not None and not math.isnan(r.score) else math.inf)


def register(app: FastAPI, ex: Explorer) -> None:
    service = ex.service

    def videos() -> list[dict[str, Any]]:
        return service.list_videos(ListVideosRequest())["videos"]

    @app.get("/search", response_class=HTMLResponse)
    def search(request: Request, q: str = "", video: str = "", before_clip: str = "", mode: str = "clip",
               since: str = "", until: str = "") -> Response:
        results: list[Any] = []
        if q.strip():
            query = SearchRequest(query=q, videos=(video,) if video else None, before_clip=blank_none(before_clip),
                                  mode=mode, since=blank_none(since), until=blank_none(until))
            results = best_first(service.search_results(query))
        elif mode not in ("clip", "node"):
            raise InvalidInputError(f"mode must be 'clip' or 'node', got {mode!r}")
        return ex.page(request, "search.html", q=q, video=video, before_clip=before_clip, mode=mode, since=since,
                       until=until, results=results, videos=videos(), trace=None)

    @app.post("/ask", response_class=HTMLResponse)
    async def ask(request: Request) -> Response:
        fields = await ex.form(request)
        video, before_raw = fields.get("video", ""), fields.get("before_clip", "")
        if not ex.can_ask:
            raise InvalidInputError("asking needs a chat model; configure llm.control and restart the explorer")
        asked = AskRequest(question=fields.get("question", ""), videos=(video,) if video else None,
                           before_clip=blank_none(before_raw))
        trace = service.answer(asked).to_dict()
        return ex.page(request, "search.html", q=asked.question, video=video, before_clip=before_raw, mode="clip",
                       since="", until="", results=[], videos=videos(), trace=trace)
