"""The named reads behind the service's results (timelines, clips, characters, the graph view).

Every read is a named, parameterized query run in a READ session. Moved here from the explorer so that the MCP
server and the explorer share them without one front end importing another; front ends reach them through
`MemoryService` (its results, and `MemoryService.evidence` for the pages' evidence reads). Analysts' input (ids, clip
numbers, search text) only ever reaches Cypher as parameters; nothing here builds a query string. Tags are
rendered from the MENTIONS structure (`<character_K>`), never by rewriting text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.tags import render_characters

# The graph view is drawn on the analyst's machine; past this many nodes a browser stops being responsive
# (measured in docs/benchmarks.md, "Explorer"), so larger neighbourhoods are cut and say so.
MAX_GRAPH_NODES = 2000


def _chars(rows: Iterable[Sequence[Any] | None]) -> dict[tuple[str, int], int]:
    return {(kind, int(eid)): int(char) for kind, eid, char in (r for r in rows if r) if char is not None}


def render(text: str, chars: Iterable[Sequence[Any] | None]) -> str:
    return render_characters(text, _chars(chars))


def videos(graph: MemoryGraph) -> list[dict[str, Any]]:
    return graph.ex.read("explore/videos")


def timeline(graph: MemoryGraph, video_id: str) -> list[dict[str, Any]]:
    rows = graph.ex.read("explore/video_clips", video_id=video_id)
    if not rows:
        raise NotFoundError(f"no source {video_id!r} in the graph")
    return rows


def clip(graph: MemoryGraph, video_id: str, clip_index: int) -> dict[str, Any]:
    rows = graph.ex.read("explore/clip", video_id=video_id, clip_index=clip_index)
    if not rows:
        raise NotFoundError(f"no clip {clip_index} of {video_id!r} in the graph")
    [result] = graph.search.clips([(video_id, clip_index)])
    out = dict(rows[0])
    out["memories"] = [m.model_dump() for m in result.memories]
    return out


@dataclass(frozen=True)
class CharacterSummary:
    """A character as the index lists it: id, name, size and members (`face_3`, `voice_5`)."""

    char_id: int
    name: str | None
    size: int | None
    members: list[str]


def characters(graph: MemoryGraph, limit: int = 500) -> list[CharacterSummary]:
    return [CharacterSummary(**r) for r in graph.ex.read("explore/characters", limit=limit)]


@dataclass
class CharacterView:
    char_id: int
    name: str
    aliases: list[int]
    members: list[dict[str, Any]]
    crops: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    snippets: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    same_as: list[dict[str, Any]] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)


def character(graph: MemoryGraph, char_id: int, crops_per_face: int = 4, snippets_per_voice: int = 4,
              memory_limit: int = 500) -> CharacterView:
    rows = graph.ex.read("explore/character", char_id=char_id)
    if not rows:
        raise NotFoundError(f"no character {char_id} in the graph")
    row = rows[0]
    members = sorted(row["members"], key=lambda m: (m["kind"], m["entity_id"]))
    faces = [m["entity_id"] for m in members if m["kind"] == "face"]
    voices = [m["entity_id"] for m in members if m["kind"] == "voice"]
    ids = [m["entity_id"] for m in members]
    view = CharacterView(char_id=row["char_id"], name=row["name"], aliases=list(row["aliases"]), members=members)
    view.crops = {r["entity_id"]: r["crops"] for r in graph.ex.read("explore/face_crops", ids=faces,
                                                                     per=crops_per_face)}
    view.snippets = {r["entity_id"]: r["snippets"] for r in graph.ex.read("explore/voice_snippets", ids=voices,
                                                                           per=snippets_per_voice)}
    view.same_as = graph.ex.read("explore/same_as_of", ids=ids)
    view.memories = [{**m, "text": render(m["text"], m["chars"])}
                     for m in graph.ex.read("explore/entity_memories", ids=ids, limit=memory_limit)]
    return view


@dataclass
class GraphView:
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    truncated: bool

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "edges": self.edges, "truncated": self.truncated}


class _Builder:
    """Nodes and edges without duplicates, stopping at a node budget."""

    def __init__(self, max_nodes: int) -> None:
        self.max_nodes = max_nodes
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[str, dict[str, Any]] = {}
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


def neighbourhood(graph: MemoryGraph, video_id: str, from_clip: int = 0, to_clip: int | None = None,
                  max_nodes: int = MAX_GRAPH_NODES) -> GraphView:
    """Clip ↔ memories ↔ entities ↔ characters for a span of clips, capped at `max_nodes` drawn nodes."""
    to = to_clip if to_clip is not None else 2**31 - 1
    rows = graph.ex.read("explore/graph_rows", video_id=video_id, from_clip=from_clip, to_clip=to,
                         max_memories=max_nodes)
    b = _Builder(max_nodes)
    for r in rows:
        clip_node = f"clip:{r['clip_key']}"
        if not b.node(clip_node, "Clip", f"clip {r['clip_index']}", f"/clip/{video_id}/{r['clip_index']}"):
            break
        if r["memory_id"] is None:
            continue
        mem_node = f"memory:{r['memory_id']}"
        if not b.node(mem_node, "Memory", (r["memory_name"] or "")[:40], f"/clip/{video_id}/{r['clip_index']}"):
            break
        b.edge(mem_node, clip_node, "IN_CLIP")
        for entity in r["entities"]:
            if not entity:
                continue
            kind, eid, char = entity
            ent_node = f"{kind}:{eid}"
            href = f"/character/{char}" if char is not None else None
            if not b.node(ent_node, kind.capitalize(), f"{kind}_{eid}", href):
                break
            b.edge(mem_node, ent_node, "MENTIONS")
            if char is not None and b.node(f"character:{char}", "Character", f"character_{char}", href):
                b.edge(ent_node, f"character:{char}", "IS")
    return GraphView(list(b.nodes.values()), list(b.edges.values()), b.truncated)
