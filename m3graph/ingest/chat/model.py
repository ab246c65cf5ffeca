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


FILE_KINDS = ("image", "document", "chart", "audio", "other")
FILE_KEYS = {"path", "name", "kind"}
MAX_FILE_PATH = 1000
MAX_FILES_PER_TURN = 50


@dataclass(frozen=True)
class FileRef:
    """A file a turn shares, as the source wrote it: `path` is relative to the files root the caller allows
    (`ingest-chat --files-root`); nothing is opened while a conversation is parsed (see `attachments.py`)."""

    path: str
    name: str | None = None  # display name; default the path's base name
    kind: str | None = None  # one of FILE_KINDS; default inferred from the bytes

    @property
    def display_name(self) -> str:
        return self.name or self.path.replace("\\", "/").rsplit("/", 1)[-1]


def file_refs(value: object) -> tuple[FileRef, ...]:
    """A turn's ``files`` list validated (raises ValueError with what is wrong): objects with a string `path`,
    optional `name` and `kind`; a bare string is read as a path."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError("'files' must be a list")
    if len(value) > MAX_FILES_PER_TURN:
        raise ValueError(f"'files' lists {len(value)} files (at most {MAX_FILES_PER_TURN} per turn)")
    out = []
    for i, item in enumerate(value):
        item = {"path": item} if isinstance(item, str) else item
        if not isinstance(item, dict):
            raise ValueError(f"files[{i}] must be an object with a 'path'")
        bad = sorted(set(item) - FILE_KEYS)
        if bad:
            raise ValueError(f"files[{i}]: unknown key {bad[0]!r} (allowed: {sorted(FILE_KEYS)})")
        path, name, kind = item.get("path"), item.get("name"), item.get("kind")
        if not isinstance(path, str) or not path.strip() or len(path) > MAX_FILE_PATH or "\x00" in path:
            raise ValueError(f"files[{i}] needs a 'path' string (at most {MAX_FILE_PATH} characters)")
        if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 200):
            raise ValueError(f"files[{i}]: 'name' must be a non-empty string of at most 200 characters")
        if kind is not None and kind not in FILE_KINDS:
            raise ValueError(f"files[{i}]: 'kind' must be one of {', '.join(FILE_KINDS)}")
        out.append(FileRef(path=path.strip(), name=" ".join(name.split()) if name else None, kind=kind))
    return tuple(out)


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
    files: tuple[FileRef, ...] = ()  # files shared with this turn (a turn may share files and say nothing)


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
