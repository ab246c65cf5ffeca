"""Where an agent's note may go, and how it is marked: notes keep their provenance (issue 37, item 7).

Why its own source: a note written into a conversation or a video would sit in that source's timeline, and a note
"said" by a name of that source would be stored as that person's line (its speaker entity, its character, its
facts). So a note only ever goes to a notes source: the default `agent-notes`, or a source id the caller names
that is itself a notes source, or that does not exist yet and is created as one (`Video.agent_notes`). Its speaker
is the agent, or a name the caller gives marked as an agent's ("Lily (agent)"), a speaker of the notes source
only; its text starts with `[agent note]`, so every output that shows memory text (search hits, clip views, the
explorer, an answer's evidence) shows what it is; the graph marks the clip and memories (`agent_note`) and the
speaker (`agent`) for Cypher readers.
"""

from __future__ import annotations

import re

from m3graph.errors import InvalidInputError
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import check_source_id, clip_key

NOTES_SOURCE = "agent-notes"
AGENT = "agent"
AGENT_MARK = " (agent)"
NOTE_MARK = "[agent note] "
MAX_NAME_CHARS = 48
# A name the speaker line can carry ("Name <speaker_N>: text"): no tag brackets, colon or square brackets.
_NAME = re.compile(r"[^\s<>:\[\]][^<>:\[\]]*")


def agent_speaker(name: str | None) -> str:
    """The speaker a note is stored under: 'agent', or the caller's name marked as an agent's ("Lily (agent)")."""
    name = " ".join((name or AGENT).split())
    if not name or len(name) > MAX_NAME_CHARS or not _NAME.fullmatch(name):
        raise InvalidInputError(f"speaker {name[:60]!r}: use up to {MAX_NAME_CHARS} characters without < > : [ ]")
    if name.casefold() == AGENT or name.casefold().endswith(AGENT_MARK):
        return name
    return name + AGENT_MARK


def note_text(text: str) -> str:
    """The note's line as stored: marked, so no output shows it as something a person said."""
    text = " ".join(text.split())
    if not text:
        raise InvalidInputError("nothing to remember: the text is empty")
    return text if text.startswith(NOTE_MARK) else NOTE_MARK + text


def claim_notes_source(graph: MemoryGraph, source: str | None) -> str:
    """The notes source a note goes to (created as one when new); InvalidInputError for any other source."""
    source = check_source_id(source or NOTES_SOURCE)
    row = graph.ex.write("notes/claim_source", source_id=source, adopt=source == NOTES_SOURCE)[0]
    if not row["notes"]:
        raise InvalidInputError(f"{source!r} is a video or conversation, not a notes source: an agent's note goes "
                                f"to {NOTES_SOURCE!r} or to a source id of its own")
    return source


def release_notes_source(graph: MemoryGraph, source: str) -> None:
    """Removes a notes source a failed note claimed, while it holds no clip."""
    graph.ex.write("notes/drop_empty_source", source_id=source)


def mark_note(graph: MemoryGraph, source: str, clip: int) -> None:
    """Marks the written note's clip and memories (`agent_note`) and its speaker (`agent`)."""
    graph.ex.write("notes/mark_note", clip_key=clip_key(source, clip))


__all__ = ["AGENT", "NOTES_SOURCE", "NOTE_MARK", "agent_speaker", "claim_notes_source", "mark_note", "note_text",
           "release_notes_source"]
