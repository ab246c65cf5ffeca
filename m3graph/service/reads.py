"""The named reads behind the service's results (timelines, clips, characters, the graph view).

Every read is a named, parameterized query run in a READ session. Moved here from the explorer so that the MCP
server and the explorer share them without one front end importing another; front ends reach them through
`MemoryService` (its results, and `MemoryService.evidence` for the pages' evidence reads). Analysts' input (ids, clip
numbers, search text) only ever reaches Cypher as parameters; nothing here builds a query string. Tags are
rendered from the MENTIONS structure (`<character_K>`), never by rewriting text.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from m3graph.errors import NotFoundError
from m3graph.graphdb.facts import character_names
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.tags import TAG, render_characters
from m3graph.service.views import (
    CharacterView,
    EntityMemory,
    GraphEdge,
    GraphNode,
    GraphView,
    Member,
    SameAsVote,
    person_label,
)

# The graph view is drawn on the analyst's machine; past this many nodes a browser stops being responsive
# (measured in docs/benchmarks.md, "Explorer"), so larger neighbourhoods are cut and say so.
MAX_GRAPH_NODES = 2000


def _chars(rows: Iterable[Sequence[Any] | None]) -> dict[tuple[str, int], int]:
    return {(kind, int(eid)): int(char) for kind, eid, char in (r for r in rows if r) if char is not None}


def render(text: str, chars: Iterable[Sequence[Any] | None]) -> str:
    return render_characters(text, _chars(chars))


def videos(graph: MemoryGraph) -> list[dict[str, Any]]:
    return graph.ex.read("explore/videos")


def timeline(graph: MemoryGraph, source_id: str) -> list[dict[str, Any]]:
    rows = graph.ex.read("explore/video_clips", source_id=source_id)
    if not rows:
        raise NotFoundError(f"no source {source_id!r} in the graph")
    return rows


def clip(graph: MemoryGraph, source_id: str, clip_index: int) -> dict[str, Any]:
    rows = graph.ex.read("explore/clip", source_id=source_id, clip_index=clip_index)
    if not rows:
        raise NotFoundError(f"no clip {clip_index} of {source_id!r} in the graph")
    [result] = graph.search.clips([(source_id, clip_index)])
    out = dict(rows[0])
    out["memories"] = [m.model_dump() for m in result.memories]
    return out


def display_names(graph: MemoryGraph, char_ids: Iterable[int]) -> dict[int, str]:
    """char_id -> display name (the current name fact, else the speaker's name); unnamed ones are left out."""
    ids = sorted({int(c) for c in char_ids})
    return character_names(graph.ex, ids) if ids else {}


@dataclass(frozen=True)
class CharacterSummary:
    """A character as the index lists it: id, name, size and members (`face_3`, `voice_5`); `display_name` is its
    name fact (or its speaker's name), None when none is known."""

    char_id: int
    name: str | None
    size: int | None
    members: list[str]
    display_name: str | None = None

    @property
    def label(self) -> str:
        return person_label(self.char_id, self.display_name)


def characters(graph: MemoryGraph, limit: int = 500) -> list[CharacterSummary]:
    """The largest characters first, each with its display name."""
    rows = graph.ex.read("explore/characters", limit=limit)
    names = display_names(graph, (r["char_id"] for r in rows))
    return [CharacterSummary(**r, display_name=names.get(r["char_id"])) for r in rows]


def people(graph: MemoryGraph, limit: int = 500) -> list[CharacterSummary]:
    """The person picker's choices: named people first (by name), then the others largest first."""
    found = characters(graph, limit)
    return sorted(found, key=lambda c: (c.display_name is None, (c.display_name or "").casefold(), c.char_id))


def closest_people(graph: MemoryGraph, wanted: str, n: int = 5, limit: int = 2000) -> list[CharacterSummary]:
    """The people whose name or `character_K` is closest to `wanted` (for a 404's suggestions)."""
    found = characters(graph, limit)
    keys: dict[str, CharacterSummary] = {}
    for c in found:
        keys.setdefault(f"character_{c.char_id}", c)
        if c.display_name:
            keys.setdefault(c.display_name.casefold(), c)
    want = wanted.casefold().strip()
    close = difflib.get_close_matches(f"character_{want}" if want.isdigit() else want, list(keys), n=n, cutoff=0.5)
    picked = list({keys[k].char_id: keys[k] for k in close}.values())
    return picked or [c for c in found if c.display_name][:n]


def named(graph: MemoryGraph, name: str, limit: int = 2000) -> list[CharacterSummary]:
    """The people whose display name is `name` or begins with it as a word (case ignored): "Mel" finds nobody,
    "Melanie" finds Melanie and "Melanie Smith"."""
    want = name.casefold().strip()
    found = [c for c in characters(graph, limit) if c.display_name]
    exact = [c for c in found if c.display_name and c.display_name.casefold() == want]
    return exact or [c for c in found if c.display_name and c.display_name.casefold().split()[:1] == [want]]


def source_kinds(graph: MemoryGraph) -> dict[str, str]:
    """source id -> "conversation" (a source of sessions, or a facts list or notes), else "video"."""
    return {str(r["source_id"]): (r["kind"] if r["kind"] not in (None, "video") else
                                 "conversation" if r["sessions"] else "video")
            for r in graph.ex.read("explore/source_kinds")}


def closest_sources(graph: MemoryGraph, wanted: str, n: int = 5) -> list[str]:
    """The source ids closest to `wanted` (for a 404's suggestions)."""
    ids = [str(r["source_id"]) for r in videos(graph)]
    return difflib.get_close_matches(wanted, ids, n=n, cutoff=0.4) or ids[:n]


def named_text(text: str, entity_chars: Mapping[tuple[str, int], int], names: Mapping[int, str]) -> str:
    """Plain text with each tag replaced by the person's name (a graph label): `<face_2>` -> "Mia", or
    "character_4" when unnamed; a speaker's tag after their own name ("Melanie <speaker_7>") leaves the name."""
    out: list[str] = []
    last = 0
    for match in TAG.finditer(text):
        kind, number = match.group(1).lower(), int(match.group(2))
        char = number if kind == "character" else entity_chars.get((kind, number))
        before = text[last:match.start()]
        name = names.get(char) if char is not None else None
        if name and before.rstrip().endswith(name):
            out.append(before.rstrip())
        else:
            out.append(before)
            out.append(name or (f"character_{char}" if char is not None else f"{kind}_{number}"))
        last = match.end()
    out.append(text[last:])
    return "".join(out)


def character(graph: MemoryGraph, char_id: int, crops_per_face: int = 4, snippets_per_voice: int = 4,
              memory_limit: int = 500) -> CharacterView:
    rows = graph.ex.read("explore/character", char_id=char_id)
    if not rows:
        raise NotFoundError(f"no character {char_id} in the graph")
    row = rows[0]
    members = sorted(cast(list[Member], row["members"]), key=lambda m: (m["kind"], m["entity_id"]))
    faces = [m["entity_id"] for m in members if m["kind"] == "face"]
    voices = [m["entity_id"] for m in members if m["kind"] == "voice"]
    ids = [m["entity_id"] for m in members]
    view = CharacterView(char_id=row["char_id"], name=row["name"], aliases=list(row["aliases"]), members=members,
                         display_name=display_names(graph, [row["char_id"]]).get(row["char_id"]))
    view.crops = {r["entity_id"]: r["crops"] for r in graph.ex.read("explore/face_crops", ids=faces,
                                                                     per=crops_per_face)}
    view.snippets = {r["entity_id"]: r["snippets"] for r in graph.ex.read("explore/voice_snippets", ids=voices,
                                                                           per=snippets_per_voice)}
    view.same_as = cast(list[SameAsVote], graph.ex.read("explore/same_as_of", ids=ids))
    view.memories = [cast(EntityMemory, {**m, "text": render(m["text"], m["chars"])})
                     for m in graph.ex.read("explore/entity_memories", ids=ids, limit=memory_limit)]
    return view


class _Builder:
    """Nodes and edges without duplicates, stopping at a node budget."""

    def __init__(self, max_nodes: int) -> None:
        self.max_nodes = max_nodes
        self.nodes: dict[str, GraphNode] = {}
        self.edges: dict[str, GraphEdge] = {}
        self.truncated = False

    def node(self, node_id: str, label: str, caption: str, href: str | None) -> bool:
        if node_id in self.nodes:
            return True
        if len(self.nodes) >= self.max_nodes:
            self.truncated = True
            return False
        self.nodes[node_id] = {"id": node_id, "label": label, "caption": caption, "href": href}
        return True

    def edge(self, source: str, target: str, rel: str) -> None:
        if source in self.nodes and target in self.nodes:
            key = f"{source}|{rel}|{target}"
            self.edges.setdefault(key, {"id": key, "source": source, "target": target, "type": rel})


def _entity_chars(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, int], int]:
    return _chars(e for r in rows for e in r["entities"])


def neighbourhood(graph: MemoryGraph, source_id: str, from_clip: int = 0, to_clip: int | None = None,
                  max_nodes: int = MAX_GRAPH_NODES) -> GraphView:
    """Clip ↔ memories ↔ entities ↔ characters for a span of clips, capped at `max_nodes` drawn nodes. Labels
    name people ("Mia (character_4)"); no label is a raw tag."""
    to = to_clip if to_clip is not None else 2**31 - 1
    rows = graph.ex.read("explore/graph_rows", source_id=source_id, from_clip=from_clip, to_clip=to,
                         max_memories=max_nodes)
    chars = _entity_chars(rows)
    names = display_names(graph, chars.values())
    b = _Builder(max_nodes)
    for r in rows:
        clip_node = f"clip:{r['clip_key']}"
        if not b.node(clip_node, "Clip", f"clip {r['clip_index']}", f"/clip/{source_id}/{r['clip_index']}"):
            break
        if r["memory_id"] is None:
            continue
        mem_node = f"memory:{r['memory_id']}"
        caption = named_text(r["memory_name"] or "", chars, names)
        if not b.node(mem_node, "Memory", caption[:60], f"/clip/{source_id}/{r['clip_index']}"):
            break
        b.edge(mem_node, clip_node, "IN_CLIP")
        for entity in r["entities"]:
            if not entity:
                continue
            kind, eid, char = entity
            ent_node = f"{kind}:{eid}"
            href = f"/character/{char}" if char is not None else None
            name = names.get(char) if char is not None else None
            if not b.node(ent_node, kind.capitalize(), f"{name} ({kind}_{eid})" if name else f"{kind}_{eid}", href):
                break
            b.edge(mem_node, ent_node, "MENTIONS")
            if char is not None and b.node(f"character:{char}", "Character", person_label(char, name), href):
                b.edge(ent_node, f"character:{char}", "IS")
    return GraphView(list(b.nodes.values()), list(b.edges.values()), b.truncated)


def when_label(value: Any) -> str:
    """A clip's start time for a label or a table: "Mon 8 May 2023, 13:56" (None -> "")."""
    moment = value.to_native() if hasattr(value, "to_native") else value
    if isinstance(moment, str):
        try:
            moment = datetime.fromisoformat(moment[:19])
        except ValueError:
            return moment
    if not isinstance(moment, datetime):
        return "" if moment is None else str(moment)
    return f"{moment:%a} {moment.day} {moment:%b %Y, %H:%M}"


def overview(graph: MemoryGraph, source_id: str, from_clip: int = 0, to_clip: int | None = None,
             max_clips: int = MAX_GRAPH_NODES) -> GraphView:
    """A source's clips (a conversation's sessions) and the people in each, without the memories: a clip node
    carries `expand` (the detail endpoint's clip range), which the graph view draws on demand."""
    to = to_clip if to_clip is not None else 2**31 - 1
    rows = graph.ex.read("explore/graph_overview", source_id=source_id, from_clip=from_clip, to_clip=to,
                         max_clips=max_clips)
    names = display_names(graph, (p[0] for r in rows for p in r["people"]))
    b = _Builder(max_clips + len(names) + 500)
    for r in rows:
        session = r["kind"] == "session"
        when = when_label(r["started_at"])
        name = f"Session {r['clip_index'] + 1}" if session else f"CLIP_{r['clip_index']}"
        caption = f"{name} ({r['memories']} memories)" + (f"\n{when}" if when else "")
        clip_node = f"clip:{r['clip_key']}"
        b.node(clip_node, "Clip", caption, f"/clip/{source_id}/{r['clip_index']}")
        b.nodes[clip_node]["expand"] = int(r["clip_index"])
        for char, n in r["people"]:
            char_node = f"character:{char}"
            if b.node(char_node, "Character", person_label(char, names.get(char)), f"/character/{char}"):
                b.edge(clip_node, char_node, "IN")
                b.edges[f"{clip_node}|IN|{char_node}"]["weight"] = int(n)
    return GraphView(list(b.nodes.values()), list(b.edges.values()), len(rows) >= max_clips)


@dataclass(frozen=True)
class SessionSpeaker:
    """Who spoke in a session: the speaker entity, its character and name, and its turns there."""

    entity_id: int
    char_id: int | None
    name: str | None
    turns: int | None

    @property
    def label(self) -> str:
        return person_label(self.char_id, self.name) if self.char_id is not None else (self.name or "?")


@dataclass(frozen=True)
class Session:
    """One session of a conversation as its page lists it."""

    clip_index: int
    started_at: datetime | None
    turns: int | None
    memories: int
    state: str | None
    reason: str | None
    speakers: list[SessionSpeaker]

    @property
    def when(self) -> str:
        return when_label(self.started_at)

    @property
    def number(self) -> int:
        """Its number as the pages say it, "Session 1" for CLIP_0."""
        return self.clip_index + 1


def sessions(graph: MemoryGraph, source_id: str) -> list[Session]:
    """A conversation's sessions in order, speakers by name; empty for a video (its clips are no sessions)."""
    rows = graph.ex.read("explore/sessions", source_id=source_id)
    names = display_names(graph, (s["char_id"] for r in rows for s in r["speakers"] if s["char_id"] is not None))
    out = []
    for r in rows:
        started = r["started_at"].to_native() if hasattr(r["started_at"], "to_native") else r["started_at"]
        speakers = [SessionSpeaker(entity_id=int(s["entity_id"]), char_id=s["char_id"],
                                   name=(names.get(s["char_id"]) if s["char_id"] is not None else None) or s["name"],
                                   turns=s["turns"]) for s in r["speakers"]]
        out.append(Session(clip_index=int(r["clip_index"]), started_at=started, turns=r["turns"],
                           memories=int(r["memories"]), state=r["state"], reason=r["reason"], speakers=speakers))
    return out


class ExplorerReads:
    """The explorer's reads over one open store, as typed operations: people by name, a conversation's sessions,
    the graph view's overview and detail."""

    def __init__(self, graph: MemoryGraph) -> None:
        self.graph = graph

    def names(self, char_ids: Iterable[int]) -> dict[int, str]:
        return display_names(self.graph, char_ids)

    def people(self, limit: int = 500) -> list[CharacterSummary]:
        return people(self.graph, limit)

    def named(self, name: str) -> list[CharacterSummary]:
        return named(self.graph, name)

    def closest_people(self, wanted: str) -> list[CharacterSummary]:
        return closest_people(self.graph, wanted)

    def closest_sources(self, wanted: str) -> list[str]:
        return closest_sources(self.graph, wanted)

    def source_kinds(self) -> dict[str, str]:
        return source_kinds(self.graph)

    def sessions(self, source_id: str) -> list[Session]:
        return sessions(self.graph, source_id)

    def overview(self, source_id: str, from_clip: int = 0, to_clip: int | None = None,
                 max_clips: int = MAX_GRAPH_NODES) -> GraphView:
        return overview(self.graph, source_id, from_clip, to_clip, max_clips)

    def neighbourhood(self, source_id: str, from_clip: int = 0, to_clip: int | None = None,
                      max_nodes: int = MAX_GRAPH_NODES) -> GraphView:
        return neighbourhood(self.graph, source_id, from_clip, to_clip, max_nodes)
