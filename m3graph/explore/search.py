"""Search and ask: the service's search (the one every front end runs) and the H-round controller.

The clips are the service's search result, the one the CLI and MCP show: for the same question every front end shows
the same ones in the same order (tests/e2e/test_front_ends_agree.py); `<character_K>` in the query scopes the search
to that person, and since/until to a time window; `as_of` (a date or VIDEO#N) shows the version of each fact that
held then and `all_versions` every version, a superseded one marked with when (or that an analyst superseded it by
hand, with a button to undo that: `corrections`). That order is the search's ranking, best first: each clip shows
the fused relevance it was ranked by (and its best memory's cosine, which alone would not explain the order). Ask is
offered only when `m3graph explore` found a configured chat model (no model, no box). The person picker beside the
query scopes the search to one person by name (the same scope as a tag); each hit shows when its clip began, and
the query's words are marked in its memories.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from m3graph.errors import InvalidInputError
from m3graph.explore.context import Explorer, blank_none, marks_for
from m3graph.service import AskRequest, ListVideosRequest, SearchRequest
from m3graph.service.results import ClipHit, VideoSummary


def sessions_of(ex: Explorer, hits: list[ClipHit]) -> dict[str, int]:
    """"source#clip" -> its session number, for the hits that are sessions of a conversation."""
    out: dict[str, int] = {}
    for video in dict.fromkeys(h.source_id for h in hits):
        out |= {f"{video}#{s.clip_index}": s.number for s in ex.reads.sessions(video)}
    return out


def register(app: FastAPI, ex: Explorer) -> None:
    service = ex.service

    def videos() -> list[VideoSummary]:
        return service.list_videos(ListVideosRequest()).videos

    @app.get("/search", response_class=HTMLResponse)
    def search(request: Request, q: str = "", video: str = "", before_clip: str = "", mode: str = "clip",
               since: str = "", until: str = "", as_of: str = "", all_versions: str = "",
               person: str = "") -> Response:
        results: list[ClipHit] = []
        who = blank_none(person)
        if who is not None and not who.isdigit():
            raise InvalidInputError(f"person must be a character's number (the picker's), got {who[:40]!r}")
        if q.strip():
            query = SearchRequest(query=q, videos=(video,) if video else None, before_clip=blank_none(before_clip),
                                  mode=mode, since=blank_none(since), until=blank_none(until),
                                  as_of=blank_none(as_of), all_versions=blank_none(all_versions) or False,
                                  characters=(int(who),) if who is not None else ())
            results = service.search(query).clips
        elif mode not in ("clip", "node"):
            raise InvalidInputError(f"mode must be 'clip' or 'node', got {mode!r}")
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return ex.page(request, "search.html", q=q, video=video, before_clip=before_clip, mode=mode, since=since,
                       until=until, as_of=as_of, all_versions=bool(blank_none(all_versions)), results=results,
                       videos=videos(), trace=None, here=here, people=ex.reads.people(), person=who or "",
                       marks=marks_for(q), sessions=sessions_of(ex, results))

    @app.post("/ask", response_class=HTMLResponse)
    async def ask(request: Request) -> Response:
        fields = await ex.form(request)
        video, before_raw = fields.get("video", ""), fields.get("before_clip", "")
        if not ex.can_ask:
            raise InvalidInputError("asking needs a chat model; configure llm.control and restart the explorer")
        asked = AskRequest(question=fields.get("question", ""), videos=(video,) if video else None,
                           before_clip=blank_none(before_raw))
        trace = service.ask(asked)
        return ex.page(request, "search.html", q=asked.question, video=video, before_clip=before_raw, mode="clip",
                       since="", until="", as_of="", all_versions=False, results=[], videos=videos(), trace=trace,
                       here="/search", people=ex.reads.people(), person="", sessions={})
