"""The typed shapes of what the explorer draws from the service: a character page's rows and the graph view's
nodes and edges.

They are `TypedDict`s over the named reads' rows (the same dicts at run time, so templates and JSON keep their
shapes) and dataclasses around them; kept apart from `reads` so the shapes a front end may rely on are in one small
module, and the reads that fill them stay beside their queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict


def person_label(char_id: int, name: str | None) -> str:
    """How a person is shown: "Mia (character_4)" when a name is known, else "character_4"."""
    return f"{name} (character_{char_id})" if name else f"character_{char_id}"


class Member(TypedDict):
    """One entity of a character (a face, voice or speaker): what the character page lists."""

    entity_id: int
    kind: str
    name: str | None


class FaceCrop(TypedDict):
    """A stored face crop and where it was seen (`explore/face_crops`)."""

    uri: str
    source_id: str
    clip_index: int
    t: float | None


class VoiceSnippet(TypedDict):
    """An utterance of a voice with its audio snippet (`explore/voice_snippets`)."""

    uri: str | None
    text: str | None
    source_id: str
    clip_index: int
    start_s: float | None


class SameAsVote(TypedDict):
    """A face-voice equivalence with its votes and the character of each side (`explore/same_as_of`)."""

    face: int
    voice: int
    votes: int | None
    evidence: list[Any]
    face_char: int | None
    voice_char: int | None


class EntityMemory(TypedDict):
    """A memory mentioning one of the character's entities, its tags rendered (`explore/entity_memories`)."""

    memory_id: str
    kind: str
    text: str
    source_id: str
    clip_index: int
    order: int | None
    chars: list[Any]


@dataclass
class CharacterView:
    """Everything the character page shows, as typed rows: the explorer renders them and reads nothing itself."""

    char_id: int
    name: str
    aliases: list[int]
    members: list[Member]
    crops: dict[int, list[FaceCrop]] = field(default_factory=dict)
    snippets: dict[int, list[VoiceSnippet]] = field(default_factory=dict)
    same_as: list[SameAsVote] = field(default_factory=list)
    memories: list[EntityMemory] = field(default_factory=list)
    display_name: str | None = None

    @property
    def label(self) -> str:
        return person_label(self.char_id, self.display_name)


class GraphNode(TypedDict, total=False):
    """A drawn node: `id`, `label`, `caption` and `href` always; `expand` (the clip to draw on demand) on an
    overview's clip node."""

    id: str
    label: str
    caption: str
    href: str | None
    expand: int


class GraphEdge(TypedDict, total=False):
    """A drawn edge: `id`, `source`, `target` and `type` always; `weight` on an overview's clip-person edge."""

    id: str
    source: str
    target: str
    type: str
    weight: int


@dataclass
class GraphView:
    """The graph view's JSON: nodes and edges in the shapes the browser code draws, and whether the cap cut it."""

    nodes: list[GraphNode]
    edges: list[GraphEdge]
    truncated: bool

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "edges": self.edges, "truncated": self.truncated}
