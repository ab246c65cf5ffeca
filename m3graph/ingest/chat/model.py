"""Conversations as data: what every chat/transcript loader produces and what ingestion writes.

Loaders (LoCoMo JSON, the generic JSON, SRT/WebVTT, plain "Speaker: text") parse and validate a whole file
into these frozen objects before anything touches the graph, so a malformed file costs nothing. A session is
stored as one Clip of any length and each turn as one episodic memory (see `ingest.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from m3graph.errors import InvalidInputError


class ChatFormatError(InvalidInputError):
    """A conversation/transcript file that cannot be read as its format; names the file and the line."""

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {message}; nothing was written")


@dataclass(frozen=True)
class Turn:
    """One utterance. `turn_id` is the source's id for it ("D1:3", a cue number) and becomes the memory's
    `source_ids`, so evidence recall works on raw turns and on model-written memories alike."""

    turn_id: str
    speaker: str
    text: str
    caption: str | None = None  # what an image turn shares (a machine caption); kept in the memory text
    start_s: float | None = None  # offsets within the session when the source has them (subtitle cues)
    end_s: float | None = None


@dataclass(frozen=True)
class Session:
    """One sitting of a conversation; `index` is 0-based and becomes the clip index on a fresh source.

    `key` is the session's identity within its source ("session_3", or a content digest for formats without
    numbered sessions): ingestion skips sessions whose key is already in the graph and appends the others.
    """

    index: int
    started_at: datetime | None
    turns: tuple[Turn, ...]
    key: str = ""

    @property
    def session_key(self) -> str:
        return self.key or f"session_{self.index + 1}"


@dataclass(frozen=True)
class Conversation:
    source_id: str
    sessions: tuple[Session, ...]
    speakers: tuple[str, ...]  # every name that speaks, in order of first appearance (or as declared)
    path: str | None = None  # the file it was read from, for messages


@dataclass(frozen=True)
class EvidenceQuestion:
    """A benchmark question with the turn ids holding its evidence. `answer` is "" where the benchmark has none
    (LoCoMo category 5: adversarial; the right response is that it was never mentioned)."""

    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int
    adversarial_answer: str | None = None


def speakers_in_order(sessions: tuple[Session, ...], declared: tuple[str, ...] = ()) -> tuple[str, ...]:
    seen: dict[str, None] = dict.fromkeys(declared)
    for session in sessions:
        for turn in session.turns:
            seen.setdefault(turn.speaker, None)
    return tuple(seen)
