"""What a caller needs to cite a shown memory: its clip key, the conversation turn it stands for, when it was
said, and the people it names by name.

Why a step of its own: a search hit used to carry only its text and memory id, so an agent could not say "Mia
said on 8 May 2023 (turn D3:4)" nor tell whom `<character_4>` means without another call. Each shown memory
gets, in two reads for the whole result (never one per hit):

* `clip`: the clip key "source#N" (`fetch_clip(video, clip)` reads around it);
* `turn_id`: the conversation turn it was written from (the first, for a memory written from several; none for
  a video's memories);
* `date`: when its clip started (a conversation session's date and time), ISO 8601, where known;
* `names`: each person its text tags, in order, as "Mia (character_4)" (the display name:
  `m3graph.graphdb.facts.character_names`), or "character_4" while no name is known;
* `cite`: for a passage of a shared file, the file and page an answer names, "lease.pdf, p. 4 (2 Rent)"
  (`m3graph.graphdb.passages.cite_as`, read from the passage's own header; issue 39). Filled where the result
  type has the field.
"""

from __future__ import annotations

from collections.abc import Sequence

from m3graph.graphdb import facts
from m3graph.graphdb.passages import cite_as
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.tags import TAG
from m3graph.graphdb.types import clip_key
from m3graph.service.results import ClipHit


def person(char_id: int, name: str | None) -> str:
    """A person as shown: "Mia (character_4)", or "character_4" while no name is known."""
    return f"{name} (character_{char_id})" if name else f"character_{char_id}"


def _tagged(text: str) -> list[int]:
    """The K of each `<character_K>` in the text, in order of first appearance."""
    return list(dict.fromkeys(int(m.group(2)) for m in TAG.finditer(text) if m.group(1).lower() == "character"))


def cite(graph: MemoryGraph, clips: Sequence[ClipHit]) -> list[ClipHit]:
    """The clips with every memory's `clip`, `turn_id`, `date`, `names` and (a file passage's) `cite` filled in."""
    ids = [m.memory_id for c in clips for m in c.memories]
    if not ids:
        return list(clips)
    turns = {r["memory_id"]: (r["source_ids"] or [None])[0]
             for r in graph.ex.read("search/memories_by_id", ids=ids)}
    people = sorted({k for c in clips for m in c.memories for k in _tagged(m.text)})
    names = facts.character_names(graph.ex, people) if people else {}
    out = []
    for c in clips:
        date = c.started_at.isoformat() if c.started_at else None
        memories = [m.model_copy(update={
            "clip": clip_key(c.source_id, c.clip_index), "turn_id": turns.get(m.memory_id), "date": date,
            "names": [person(k, names.get(k)) for k in _tagged(m.text)] or None,
            "cite": cite_as(m.text)}) for m in c.memories]
        out.append(c.model_copy(update={"memories": memories}))
    return out


__all__ = ["cite", "person"]
