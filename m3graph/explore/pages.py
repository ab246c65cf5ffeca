"""Reading pages: sources, a source's timeline, a clip, a character (with its correction form and the history of
its facts), the graph view.

The pages show what the service returns (list_videos, video_timeline, fetch_clip, history), its evidence
reads (`MemoryService.evidence`: characters, a character's evidence, crops, neighbours, the correction form's
choices) and the explorer's reads (`m3graph.service.reads.ExplorerReads`: people by name, a conversation's sessions,
the graph view's overview and detail); no page runs a query of its own. People are shown by name, "Mia
(character_4)"; a conversation's page lists its sessions by date with their speakers, not a video's columns. The
graph view of a conversation starts with its sessions and people (`?view=overview`, for any source); a session's
turns are drawn when it is clicked, and `?view=detail` draws every memory.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.explore.assets import BUNDLE
from m3graph.explore.context import Explorer, Id
from m3graph.explore.files import session_files
from m3graph.explore.media import servable
from m3graph.service import FetchClipRequest, HistoryRequest, ListVideosRequest, TimelineRequest
from m3graph.service.reads import MAX_GRAPH_NODES, CharacterView, Session, SessionSpeaker
from m3graph.service.requests import MAX_INDEX
from m3graph.service.results import History

ClipBound = Annotated[int, Query(ge=0, le=MAX_INDEX)]
NodeCap = Annotated[int, Query(ge=1, le=MAX_INDEX)]
VIEWS = ("", "overview", "detail")


def _first(values: list[Any]) -> Any:
    return values[0] if values else None


def pickers(ex: Explorer, view: CharacterView, video: str, videos: list[str]) -> dict[str, Any]:
    """The correction form's choices: this character's members (with a crop) and the other faces and voices of
    one of its sources (`videos`: where it was seen or heard), each with its character and a crop or first
    words."""
    chosen = video if video in videos else _first(videos)
    others = [] if chosen is None else [
        e for e in ex.service.evidence.source_entities(chosen) if e.char_id != view.char_id]
    return {"pick_videos": videos, "pick_video": chosen, "others": others}


def fact_history(ex: Explorer, view: CharacterView, seen_in: list[str]) -> list[History]:
    """The history tool's answer for this person in each source that saw, heard or mentions them (slot ->
    versions, oldest first), sources without facts left out: the same read the CLI and MCP `history` give."""
    sources = sorted(set(seen_in) | {m["source_id"] for m in view.memories})
    found = [ex.service.history(HistoryRequest(video=v, subject=f"<character_{view.char_id}>")) for v in sources]
    return [h for h in found if h.slots]


def _speakers(sessions: list[Session]) -> list[tuple[SessionSpeaker, int, int]]:
    """Who speaks in a conversation: (speaker, sessions, turns), most turns first."""
    seen: dict[int, tuple[SessionSpeaker, int, int]] = {}
    for s in sessions:
        for sp in s.speakers:
            first, n, turns = seen.get(sp.entity_id, (sp, 0, 0))
            seen[sp.entity_id] = (first, n + 1, turns + (sp.turns or 0))
    return sorted(seen.values(), key=lambda t: -t[2])


def register(app: FastAPI, ex: Explorer) -> None:
    service, evidence = ex.service, ex.service.evidence

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> Response:
        people = ex.reads.people(200)
        return ex.page(request, "index.html", videos=service.list_videos(ListVideosRequest()).videos,
                       kinds=ex.reads.source_kinds(),
                       characters=sorted(people, key=lambda c: (-(c.size or 0), c.char_id)))

    @app.get("/video/{source_id}", response_class=HTMLResponse)
    def video(request: Request, source_id: str) -> Response:
        timeline = service.video_timeline(TimelineRequest(video=source_id))
        sessions = ex.reads.sessions(source_id)
        if sessions:
            firsts = {c.clip: c.summary for c in timeline.clips}
            return ex.page(request, "conversation.html", source_id=source_id, sessions=sessions, firsts=firsts,
                           turns=sum(s.turns or 0 for s in sessions),
                           speakers=_speakers(sessions))
        clips = timeline.clips
        shown = {col: any(getattr(c, col) for c in clips) for col in ("faces", "voices", "speakers")}
        return ex.page(request, "video.html", source_id=source_id, clips=clips, shown=shown)

    @app.get("/person", response_class=HTMLResponse)
    def person(request: Request, name: str = "") -> Response:
        """A person by name: their page when one person has it, the candidates when several do."""
        if not name.strip():
            raise InvalidInputError("say whose page: /person?name=Mia")
        found = ex.reads.named(name)
        if len(found) == 1:
            return RedirectResponse(f"/character/{found[0].char_id}", status_code=303)
        if not found:
            raise NotFoundError(f"nobody is named {name.strip()[:80]!r}")
        return ex.page(request, "error.html", title="Several people have this name",
                       message=f"{len(found)} people are named {name.strip()[:80]!r}: pick one.",
                       suggestions=[(f"/character/{c.char_id}", c.label) for c in found])

    @app.get("/clip/{source_id}/{clip_index}", response_class=HTMLResponse)
    def clip(request: Request, source_id: str, clip_index: Id) -> Response:
        data = service.fetch_clip(FetchClipRequest(video=source_id, clip=clip_index))
        crops = evidence.face_crops([f.face for f in data.faces], per=2)
        snippets = evidence.voice_snippets([v.voice for v in data.voices], per=2)
        near = evidence.neighbours(source_id, clip_index)
        has_video = bool(data.uri) and servable(ex, data.uri or "", source_id, clip_index) is not None
        session = next((s for s in ex.reads.sessions(source_id) if s.clip_index == clip_index), None)
        return ex.page(request, "clip.html", clip=data, shown=data.clips[0], crops=crops, snippets=snippets,
                       has_video=has_video, files=session_files(ex, source_id, clip_index),
                       previous=near.previous, next=near.next, session=session)

    @app.get("/character/{char_id}", response_class=HTMLResponse)
    def character(request: Request, char_id: Id, video: str = "") -> Response:
        view = evidence.character(char_id)
        if view.char_id != char_id:  # an alias: show the surviving character under its own id
            return RedirectResponse(f"/character/{view.char_id}", status_code=303)
        history = evidence.vote_history(view.char_id)
        seen_in = evidence.character_sources(view.char_id)
        sources = dict.fromkeys(m["source_id"] for m in view.memories)
        sessions = {f"{v}#{s.clip_index}": s for v in sources for s in ex.reads.sessions(v)}
        return ex.page(request, "character.html", c=view, history=history, facts=fact_history(ex, view, seen_in),
                       sessions=sessions, **pickers(ex, view, video, seen_in))

    @app.get("/graph/{source_id}", response_class=HTMLResponse)
    def graph_page(request: Request, source_id: str, start: ClipBound = 0, end: ClipBound | None = None,
                   max_nodes: NodeCap = MAX_GRAPH_NODES, view: str = "") -> Response:
        if view not in VIEWS:
            raise InvalidInputError(f"view must be 'overview' or 'detail', got {view[:40]!r}")
        evidence.require_source(source_id)  # 404 for an unknown source
        if not view:  # a conversation opens on its sessions and people; a video on its memories
            view = "overview" if ex.reads.sessions(source_id) else "detail"
        cap = min(max_nodes, MAX_GRAPH_NODES)
        base = f"/api/graph/{quote(source_id, safe='')}"
        src = (f"{base}?start={start}&max_nodes={cap}&view={view}" + ("" if end is None else f"&end={end}"))
        here = f"/graph/{quote(source_id, safe='')}?start={start}" + ("" if end is None else f"&end={end}")
        return ex.page(request, "graph.html", source_id=source_id, src=src, detail_src=f"{base}?max_nodes={cap}",
                       view=view, here=here, bundle=BUNDLE.is_file())

    @app.get("/api/graph/{source_id}")
    def graph_json(source_id: str, start: ClipBound = 0, end: ClipBound | None = None,
                   max_nodes: NodeCap = MAX_GRAPH_NODES, view: str = "detail") -> JSONResponse:
        cap = min(max_nodes, MAX_GRAPH_NODES)
        if view == "overview":
            return JSONResponse(ex.reads.overview(source_id, start, end, cap).to_dict())
        if view not in ("", "detail"):
            raise InvalidInputError(f"view must be 'overview' or 'detail', got {view[:40]!r}")
        return JSONResponse(ex.reads.neighbourhood(source_id, start, end, cap).to_dict())
