"""Pydantic models for everything that crosses the store boundary.

Validation happens here, before any transaction opens, so bad input is refused with a message naming the
field and nothing is written.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from m3graph.dates import TimeNotes
from m3graph.errors import InvalidInputError

# Perception's output types live in m3graph.observations (perception must not import the store); re-exported here.
from m3graph.observations import FaceCluster, FaceObservation, UtteranceObservation, VoiceCluster  # noqa: F401
from m3graph.observations import FrozenModel as _Frozen
from m3graph.observations import finite_vector as _finite_vector

VideoId = str
_SOURCE_ID = r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}$"


def check_source_id(source_id: str) -> str:
    """Refuses, naming it, an id the graph cannot hold; entry points call it before any file or node is written
    (a video id also names files under the data directory, so a path separator must never get through)."""
    if not isinstance(source_id, str) or not re.fullmatch(_SOURCE_ID, source_id):
        raise InvalidInputError(f"invalid source id {source_id!r}: use 1-128 ASCII letters, digits and . _ : - "
                                "starting with a letter or digit")
    return source_id


class ClipRef(_Frozen):
    source_id: str = Field(pattern=_SOURCE_ID)
    clip_index: int = Field(ge=0)

    @property
    def key(self) -> str:
        return clip_key(self.source_id, self.clip_index)


def clip_key(source_id: str, clip_index: int) -> str:
    return f"{source_id}#{clip_index}"


class ClipInfo(ClipRef):
    """A clip of any length: a 30 s video window or a conversation session.

    `start_s`/`end_s` are offsets within the source; `started_at` is the clip's absolute start time where it is
    known (a session's date, a video's recording time), so "when" questions can be answered from the graph.
    """

    start_s: float = Field(ge=0)
    end_s: float
    uri: str | None = None
    started_at: datetime | None = None

    @field_validator("started_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("started_at must carry a time zone (use UTC when unknown)")
        return value

    def upsert_params(self, video_name: str | None = None) -> dict[str, Any]:
        """The parameters of graph/upsert_clip: one place, so every writer of a Clip sets the same properties."""
        return {"source_id": self.source_id, "clip_index": self.clip_index, "start_s": self.start_s,
                "end_s": self.end_s, "uri": self.uri, "started_at": self.started_at,
                "video_name": video_name or self.source_id}

    @model_validator(mode="after")
    def _ordered(self) -> ClipInfo:
        if not self.end_s > self.start_s:
            raise ValueError(f"clip {self.key}: end_s {self.end_s} must be after start_s {self.start_s}")
        return self


class Resolution(_Frozen):
    """How one per-clip cluster was resolved to a persistent entity."""

    label: int
    entity_id: int
    created: bool
    score: float | None  # exact reference score (mean pairwise cosine) of the match; None when created


class MemoryIn(_Frozen):
    kind: Literal["episodic", "semantic"]
    text: str = Field(min_length=1, max_length=8000)
    embedding: list[float]
    start_s: float | None = None
    end_s: float | None = None
    # What the memory was written from (chat turn ids such as "D1:3", utterance keys): evidence recall can be
    # computed whether memories are raw turns or written by a model.
    source_ids: tuple[str, ...] = ()
    # Time expressions resolved against the clip's date (chat sessions), stored beside the text (m3graph.dates).
    times: TimeNotes = TimeNotes()

    _vector = field_validator("embedding")(_finite_vector)


class EquivalenceVote(_Frozen):
    face_id: int
    voice_id: int
    source: Literal["memory", "meta-clip", "on-screen", "import", "manual"] = "memory"


class MemoryWriteSummary(_Frozen):
    episodic: int
    semantic_created: int
    semantic_reinforced: int
    equivalence_votes: int
    characters_changed: int


class RenderedMemory(_Frozen):
    memory_id: str
    kind: str
    text: str  # tags rendered as <character_K>
    raw_text: str  # tags as stored (<face_N>/<voice_N>)
    clip_index: int
    order_in_clip: int
    score: float | None = None  # the memory's cosine to the query, where the vector ranking saw it
    source_ids: tuple[str, ...] = ()  # the turns / utterances it was written from (evidence)
    times: TimeNotes = TimeNotes()  # its time expressions resolved at ingestion (`times.insert(text)` for a reader)
    # Facts that change (m3graph.fact_versions): the statement's slot and value where it has one, whether that
    # version holds now, and "superseded on 8 May 2023" when it does not.
    slot: str | None = None
    value: str | None = None
    current: bool | None = None
    superseded: str | None = None
    # Attached evidence (search_node, `MemorySearch._attach`): the hit whose file or photo brought this memory.
    attached_to: str | None = None

    @property
    def marked_text(self) -> str:
        """The text as a reader sees it: a superseded version says so."""
        return f"{self.text} ({self.superseded})" if self.superseded and self.current is False else self.text


class ClipResult(_Frozen):
    source_id: str
    clip_index: int
    start_s: float | None
    end_s: float | None
    score: float | None  # the best memory's cosine to the query (what the reference showed)
    memories: list[RenderedMemory]
    started_at: datetime | None = None  # the clip's absolute start where known (a session's date)
    rank: float | None = None  # the fused relevance the search ordered by (results come highest first)

    @property
    def label(self) -> str:
        return f"CLIP_{self.clip_index}"
