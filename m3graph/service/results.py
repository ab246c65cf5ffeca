"""What the service's operations return: one frozen, typed result per operation, the same for every front end.

Why typed: the CLI, the MCP tools and the explorer used to receive plain dicts and each re-derived what it
needed (the explorer re-filtered search results that the tools had already filtered). Now the service decides a
result once; a front end only renders it: the CLI prints its fields, the explorer's templates read them, and the
MCP tools send `to_json()`, the result's `model_dump()` made JSON-safe by `output.plain` (never an embedding).

The JSON shapes are the tools' documented ones (tests/e2e/test_mcp.py, test_front_ends_agree.py): a field named
in `omit_none` is left out of the JSON when it is None (a search hit carries `score` only where the vector
ranking saw it), and a JSON key other than the Python name is an alias (`ClipHit.source_id` is "video"). Each
result carries the ids a caller needs to cite or correct what it shows: the source id and clip index (the clip
key), the memory id of every memory and fact version, the char id of a person, the vote id of a vote, the job id
of an ingestion. `result["key"]` reads the JSON value, for callers that indexed the old dicts."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    computed_field,
    field_serializer,
    model_serializer,
)

from m3graph.graphdb.votes import VoteRecord
from m3graph.service.output import plain


class Result(BaseModel):
    """A frozen operation result; `to_json()` is what the MCP tools and `--json` print."""

    model_config = ConfigDict(frozen=True)
    omit_none: ClassVar[frozenset[str]] = frozenset()  # JSON keys left out when None

    @model_serializer(mode="wrap")
    def _shape(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and self.omit_none:
            names = {self.__class__.model_fields[n].serialization_alias or n: n for n in self.omit_none}
            return {k: v for k, v in data.items() if not (k in names and v is None)}
        return data

    def to_json(self) -> dict[str, Any]:
        """The result as the tools send it: JSON keys (aliases), plain values, never a vector."""
        value: dict[str, Any] = plain(self.model_dump(by_alias=True))
        return value

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]


def _round4(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


# ------------------------------------------------------------------------------------------------ search


class FileRef(Result):
    """A shared file a memory cites: `file_text(sha256)` reads it."""

    sha256: str
    name: str | None = None
    kind: str | None = None
    shared_at: Any = None


class MemoryHit(Result):
    """One memory as shown: tags as <character_K>; `superseded` only on a version that no longer holds. Cited by
    `memory_id` (what correct_fact takes), `turn_id` (its conversation turn), `names` ("Mia (character_4)") and
    `cite` (a file passage's "lease.pdf, p. 4"), filled by `service.citations.cite`. Not in the JSON: `clip`, `date`
    (the ClipHit's `clip_key`, `started_at`), `speaker`, `slot`, `current`."""

    omit_none: ClassVar[frozenset[str]] = frozenset({"score", "superseded", "files", "turn_id", "names", "cite"})
    kind: str
    text: str
    memory_id: str
    score: float | None = None
    superseded: str | None = None
    files: list[FileRef] | None = None
    turn_id: str | None = None
    names: list[str] | None = None
    cite: str | None = None
    slot: str | None = Field(default=None, exclude=True)
    current: bool | None = Field(default=None, exclude=True)
    speaker: str | None = Field(default=None, exclude=True)
    clip: str | None = Field(default=None, exclude=True)
    date: str | None = Field(default=None, exclude=True)

    @field_serializer("score")
    def _rounded(self, value: float | None) -> float | None:
        return _round4(value)

    @property
    def marked_text(self) -> str:
        """The text as a reader sees it: a superseded version says so."""
        return f"{self.text} ({self.superseded})" if self.superseded else self.text


class ClipHit(Result):
    """A clip with its memories (`Equivalence:` lines left out), best first in a search; `relevance` is what the
    search ordered by, `score` its best memory's cosine (both rounded to 4 places in the JSON)."""

    omit_none: ClassVar[frozenset[str]] = frozenset({"score", "rank"})
    source_id: str = Field(serialization_alias="video")
    clip_index: int = Field(serialization_alias="clip")
    start_s: float | None = None
    end_s: float | None = None
    started_at: datetime | None = None
    memories: list[MemoryHit]
    score: float | None = None
    rank: float | None = Field(default=None, serialization_alias="relevance")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def clip_key(self) -> str:
        """"source#N": how a memory's clip is cited (and what `as_of` and the explorer's links take)."""
        return f"{self.source_id}#{self.clip_index}"

    @field_serializer("score", "rank")
    def _rounded(self, value: float | None) -> float | None:
        return _round4(value)

    @property
    def label(self) -> str:
        return f"CLIP_{self.clip_index}"


class SearchResult(Result):
    """THE search's answer, what every front end shows: the request as understood, and the clips best first."""

    query: str
    mode: str
    videos: list[str] | None
    before_clip: int | None
    characters: list[int]
    clips: list[ClipHit]

    @property
    def hits(self) -> list[MemoryHit]:
        """Every memory shown, best first: by score where the ranking scored memories (node mode), else in the
        clips' order. Each carries its `memory_id` and `clip` key, to cite or correct it."""
        found = [m for c in self.clips for m in c.memories]
        if self.mode == "node":
            return sorted(found, key=lambda m: -(m.score if m.score is not None else -2.0))
        return found


# ------------------------------------------------------------------------------------------------ reads


class VideoSummary(Result):
    source_id: str
    name: str | None = None
    clips: int
    duration_s: float | None = None
    started_at: Any = None
    memories: int


class VideoList(Result):
    videos: list[VideoSummary]


class Stats(Result):
    """Node and relationship counts (of one source when `video` is given)."""

    video: str | None = None
    counts: dict[str, int]


class TimelineClip(Result):
    clip: int
    start_s: float | None = None
    end_s: float | None = None
    started_at: Any = None
    state: str | None = None
    reason: str | None = None
    memories: int
    faces: list[int]
    voices: list[int]
    speakers: list[int]
    summary: str | None = None


class Timeline(Result):
    video: str
    clips: list[TimelineClip]


class FaceInClip(Result):
    face: int
    character: int | None = None


class VoiceInClip(Result):
    voice: int
    character: int | None = None


class ClipView(Result):
    """One clip (and its neighbours in `clips`): state, media uri, the faces and voices perceived in it."""

    video: str
    clip: int
    state: str | None = None
    reason: str | None = None
    uri: str | None = None
    faces: list[FaceInClip]
    voices: list[VoiceInClip]
    clips: list[ClipHit]


class SameAs(Result):
    face: int
    voice: int
    votes: int | None = None
    evidence_clips: list[Any]
    face_character: int | None = None
    voice_character: int | None = None


class Episode(Result):
    """An episode a person appears in: where (video, clip), what happened, and its memory id to cite it."""

    omit_none: ClassVar[frozenset[str]] = frozenset({"memory_id"})
    video: str
    clip: int
    text: str
    memory_id: str | None = None


class ClipSpan(Result):
    first_clip: int
    last_clip: int


class Snippet(Result):
    uri: str | None = None
    text: str | None = None


class Candidate(Result):
    char_id: int
    mentions: int


class CharacterResult(Result):
    """Who a person is: entities, aliases, votes, facts, episodes, where they appear, crops and snippets."""

    omit_none: ClassVar[frozenset[str]] = frozenset({"resolved_from_alias", "other_candidates"})
    char_id: int
    name: str | None = None
    aliases: list[int]
    faces: list[int]
    voices: list[int]
    speakers: list[int]
    same_as: list[SameAs]
    manual_votes: list[VoteRecord]
    facts: list[str]
    episodes: list[Episode]
    appearances: dict[str, ClipSpan]
    face_crops: dict[str, list[str]]
    voice_snippets: dict[str, list[Snippet]]
    resolved_from_alias: int | None = None
    other_candidates: list[Candidate] | None = None


# ------------------------------------------------------------------------------------------------ facts


class ManualMark(Result):
    state: str
    note: str | None = None
    via: str | None = None
    at: Any = None


class FactVersion(Result):
    omit_none: ClassVar[frozenset[str]] = frozenset({"superseded", "contradicts", "manual"})
    memory_id: str
    value: str | None = None
    negated: bool
    current: bool
    said_in: list[str]
    superseded: str | None = None
    contradicts: list[str] | None = None
    manual: ManualMark | None = None


class FactSlot(Result):
    slot: str
    subject: str
    attribute: str | None = None
    versions: list[FactVersion]


class History(Result):
    omit_none: ClassVar[frozenset[str]] = frozenset({"note"})
    video: str
    subject: str
    slots: list[FactSlot]
    note: str | None = None  # why there are no facts (or only names): e.g. a chat ingested without --memorize


class FactLine(Result):
    omit_none: ClassVar[frozenset[str]] = frozenset({"superseded"})
    text: str
    value: str | None = None
    clip: int
    memory_id: str
    superseded: str | None = None


class Facts(Result):
    video: str
    facts: list[FactLine]


class FactCorrection(Result):
    omit_none: ClassVar[frozenset[str]] = frozenset({"superseded"})
    memory_id: str
    video: str
    slot: str
    state: str
    changed: bool
    previous: str
    current: bool
    superseded: str | None = None


# ------------------------------------------------------------------------------------------------ ask, writes


class AskResult(Result):
    """The controller's trace (`AnswerTrace.to_dict()`): the answer, its outcome, every round and the evidence."""

    model_config = ConfigDict(frozen=True, extra="allow")
    question: str
    answer: str | None = None
    outcome: str
    rounds: list[dict[str, Any]]
    evidence: dict[str, list[str]]


class VoteResult(Result):
    vote: VoteRecord
    characters: dict[str, int | None]


class UndoVoteResult(Result):
    vote_id: int
    undone: bool
    note: str | None = None


class Deleted(Result):
    """What a delete removed: a clip (video, clip), a source (video, clips) or a person (char_id, summary)."""

    omit_none: ClassVar[frozenset[str]] = frozenset({"video", "clip", "clips", "char_id", "summary"})
    deleted: str
    video: str | None = None
    clip: int | None = None
    clips: int | None = None
    char_id: int | None = None
    summary: dict[str, int] | None = None


class JobProgress(Result):
    clip: int
    clips: int
    stage: str
    detail: str | None = None


class JobStatus(Result):
    job_id: str
    state: str
    paths: list[str]
    live: bool
    source_id: str | None = None
    elapsed_s: float
    error: str | None = None
    videos: dict[str, JobProgress]
    log: list[str]


class JobList(Result):
    jobs: list[JobStatus]


__all__ = ["AskResult", "CharacterResult", "ClipHit", "ClipView", "Deleted", "FactCorrection", "FactLine",
           "FactSlot", "FactVersion", "Facts", "FileRef", "History", "JobList", "JobStatus", "MemoryHit", "Result",
           "SearchResult", "Stats", "Timeline", "UndoVoteResult", "VideoList", "VoteResult"]
