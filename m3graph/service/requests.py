"""One frozen, typed request per operation, validated once, where it is built.

Why here and not in each front end: the CLI, the MCP tools, the explorer and the controller's tools used to
check (or not check) the same inputs each in their own way, so a NaN threshold or a 23-digit clip index got
through one door and not another. Every bound lives on a field below; a front end only builds the request.
A value that breaks a bound is refused with `InvalidInputError` naming the field (exit status 65 on the CLI, a
one-line tool error over MCP), never with a pydantic traceback or an internal error.

The field types are also the MCP tools' argument types (`m3graph.mcp.server` annotates its parameters with the
aliases defined here), so a tool's JSON schema cannot drift from the request it builds; tests/test_front_ends_
agree.py checks that, and that every field has a CLI option or is listed as deliberately absent.

A new search parameter (`speakers`, say) is one field on `SearchRequest`: `m3graph.service.search` hands the
whole request to the graph's search (`SearchSpec.of` takes the fields it shares with the spec by name), so no
front end passes fields one by one.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from m3graph.errors import InvalidInputError
from m3graph.graphdb.search_plan import MAX_K
from m3graph.graphdb.types import check_source_id

MAX_INDEX = 2**62  # clip indexes and ids: far past any real graph, well inside Neo4j's 64-bit integers
MAX_NEIGHBOURS = 5  # fetch_clip: clips before/after the asked one
MAX_ROUNDS = 50  # ask: H, the most controller rounds
MAX_TEXT = 10_000  # characters of a query, question, name or note


def _video(value: str) -> str:
    return check_source_id(value)


def _finite(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise InvalidInputError("must be a finite number")
    return value


def _utc(value: datetime | None) -> datetime | None:
    """A naive time is read as UTC (clip start times are stored time-zone aware)."""
    return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)


def _as_of(value: str | None) -> str | None:
    """"2023-05-08", "2023-05-08T14:00[Z]" or "VIDEO#N" (a clip of a source), canonical; anything else refused."""
    if value is None:
        return None
    text = value.strip()
    video, sep, clip = text.rpartition("#")
    if sep:
        if not clip.isdigit() or int(clip) > MAX_INDEX:
            raise InvalidInputError(f"a clip point is VIDEO#N with N a clip index (got {value!r:.80})")
        return f"{check_source_id(video)}#{int(clip)}"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInputError(f"is a date (2023-05-08), a time (2023-05-08T14:00) or a clip (VIDEO#N) "
                                f"(got {value!r:.80})") from None
    return text if len(text) == 10 else (when if when.tzinfo else when.replace(tzinfo=UTC)).isoformat()


def as_of_point(value: str) -> tuple[datetime | None, tuple[str, int] | None]:
    """A validated `as_of` as (the instant, None) or (None, (video, clip)); a bare date means its whole day."""
    video, sep, clip = value.rpartition("#")
    if sep:
        return None, (video, int(clip))
    when = datetime.fromisoformat(value)
    if len(value) == 10:
        when = when.replace(hour=23, minute=59, second=59)
    return (when if when.tzinfo else when.replace(tzinfo=UTC)), None


def _words(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise InvalidInputError("is empty")
    return value


# ------------------------------------------------------------------------------------------------ field types
# Shared with the MCP tool signatures: the description is what an agent reads.
VideoId = Annotated[str, AfterValidator(_video), Field(description="The source id (from list_videos).")]
Videos = Annotated[tuple[Annotated[str, AfterValidator(_video)], ...] | None,
                   Field(description="Only these source ids (from list_videos); default: all.")]
ClipIndex = Annotated[int, Field(ge=0, le=MAX_INDEX, description="The clip index within that source.")]
BeforeClip = Annotated[Annotated[int, Field(ge=0, le=MAX_INDEX)] | None, Field(description=(
    "Only memory up to and including this clip index (the moment a question is asked); default: all clips."))]
Query = Annotated[str, AfterValidator(_words), Field(min_length=1, max_length=MAX_TEXT, description=(
    "What to look for, in words. A <character_K> tag in it scopes the search to that person."))]
Mode = Annotated[Literal["clip", "node"], Field(description=(
    "'clip': the best whole clips with all their memories; 'node': the best single memories."))]
K = Annotated[Annotated[int, Field(ge=1, le=MAX_K)] | None, Field(description=(
    "How many clips (clip mode, default 2) or memories (node mode, default 20)."))]
Threshold = Annotated[Annotated[float, AfterValidator(_finite), Field(ge=-1.0, le=1.0)] | None, Field(description=(
    "Floor on the vector cosine, -1 to 1 (default: the floor measured for the text model)."))]
Characters = Annotated[tuple[Annotated[int, Field(ge=0, le=MAX_INDEX)], ...], Field(description=(
    "Scope to memories of these characters (the K of <character_K>)."))]
SpeakerNames = Annotated[tuple[Annotated[str, AfterValidator(_words), Field(min_length=1, max_length=200)], ...],
                         Field(max_length=50, description=(
                             "Only lines said by these speakers of a conversation (a full or a first name, case "
                             "ignored); default: anyone's."))]
When = Annotated[datetime | None, AfterValidator(_utc), Field(description=(
    "A time (ISO 8601, naive = UTC): since keeps clips that started at or after it, until those before it."))]
AsOf = Annotated[Annotated[str, Field(max_length=200), AfterValidator(_as_of)] | None, Field(description=(
    "Facts as they held at this point of event time: a date (2023-05-08, its whole day), a time "
    "(2023-05-08T14:00) or a clip of a source (VIDEO#N). Default: as they hold now. before_clip, since and until "
    "still choose which clips are evidence; as_of chooses which version of each fact is shown."))]
AllVersions = Annotated[bool, Field(description=(
    "Also show versions of facts that a newer fact superseded (each says when)."))]
Neighbours = Annotated[int, Field(ge=0, le=MAX_NEIGHBOURS)]
CharId = Annotated[int, Field(ge=0, le=MAX_INDEX, description="The K of a <character_K> tag.")]
Name = Annotated[str, AfterValidator(_words), Field(min_length=1, max_length=MAX_TEXT, description=(
    "A person's name, when the id is unknown: resolved through the memories that name them."))]
Question = Annotated[str, AfterValidator(_words), Field(min_length=1, max_length=MAX_TEXT, description=(
    "A question about what was seen, heard or said."))]
Rounds = Annotated[Annotated[int, Field(ge=1, le=MAX_ROUNDS)] | None, Field(description=(
    "H, the most controller rounds."))]
AskMode = Literal["auto", "m3", "tools"]
EntityId = Annotated[int, Field(ge=0, le=MAX_INDEX, description=(
    "A face, voice or speaker entity id (from character or fetch_clip), not a character id."))]
Note = Annotated[Annotated[str, Field(max_length=MAX_TEXT)] | None, Field(description=(
    "Why (kept in the vote history)."))]
VoteId = Annotated[int, Field(ge=1, le=MAX_INDEX, description="The vote_id of a manual vote.")]
DeleteKind = Annotated[Literal["clip", "video", "character"], Field(description="What to delete.")]
DeleteVideo = Annotated[Annotated[str, AfterValidator(_video)] | None, Field(description=(
    "The source id (kind clip or video)."))]
DeleteClip = Annotated[Annotated[int, Field(ge=0, le=MAX_INDEX)] | None, Field(description=(
    "The clip index (kind clip)."))]
DeleteCharId = Annotated[Annotated[int, Field(ge=0, le=MAX_INDEX)] | None, Field(description=(
    "The character id (kind character)."))]
JobId = Annotated[Annotated[str, Field(max_length=200)] | None, Field(description=(
    "The job_id ingest returned; default: every job."))]


def _message(exc: ValidationError, title: str) -> str:
    """The first problem, on one line, naming the field: "invalid search request: threshold: ... (got 5.0)"."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    msg = str(first["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    got = first.get("input")
    shown = "" if isinstance(got, dict) else f" (got {got!r:.80})"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"invalid {title}: {where + ': ' if where else ''}{msg}{shown}{more}"


class Request(BaseModel):
    """Frozen and strict about unknown fields; a broken bound raises `InvalidInputError`, not pydantic's error."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    title: ClassVar[str] = "request"

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidInputError(_message(exc, self.title)) from None


class SearchRequest(Request):
    """search_clip (mode clip) or search_node (mode node), as the controller runs them.

    `<character_K>` tags in the query scope the search to those characters (with `characters`) and are left out
    of the full-text (BM25) text; the vector is embedded from the query as written (what the controller's
    measured figures in docs/evaluation.md used).
    """

    title: ClassVar[str] = "search request"
    query: Query
    videos: Videos = None
    before_clip: BeforeClip = None
    since: When = None
    until: When = None
    characters: Characters = ()
    k: K = None
    mode: Mode = "clip"
    threshold: Threshold = None
    as_of: AsOf = None
    all_versions: AllVersions = False
    speakers: SpeakerNames = ()

    @model_validator(mode="after")
    def _window(self) -> SearchRequest:
        if self.since is not None and self.until is not None and self.since > self.until:
            raise InvalidInputError(f"since ({self.since.isoformat()}) is after until ({self.until.isoformat()})")
        return self


class FetchClipRequest(Request):
    title: ClassVar[str] = "fetch_clip request"
    video: VideoId
    clip: ClipIndex
    before: Neighbours = 0
    after: Neighbours = 0


class AskRequest(Request):
    title: ClassVar[str] = "ask request"
    question: Question
    videos: Videos = None
    before_clip: BeforeClip = None
    rounds: Rounds = None
    mode: AskMode | None = None


class CharacterRequest(Request):
    title: ClassVar[str] = "character request"
    char_id: CharId | None = None
    name: Name | None = None
    videos: Videos = None

    @model_validator(mode="after")
    def _one(self) -> CharacterRequest:
        if (self.char_id is None) == (self.name is None):
            raise InvalidInputError("give exactly one of char_id or name")
        return self


class TimelineRequest(Request):
    title: ClassVar[str] = "video_timeline request"
    video: VideoId


Subject = Annotated[str, AfterValidator(_words), Field(min_length=1, max_length=500, description=(
    "Who or what the facts are about, as memories name it (\"Mia\", \"Apple Inc.\", <face_3>)."))]
Attribute = Annotated[Annotated[str, AfterValidator(_words), Field(max_length=500)] | None, Field(description=(
    "Only this attribute (\"favourite fruit\", \"chief executive officer\"); default: every attribute."))]
HistoryK = Annotated[int, Field(ge=1, le=MAX_K, description="The most versions returned (oldest first).")]


class HistoryRequest(Request):
    """Every version of one subject's facts in one source, oldest first, with when each held (the history tool)."""

    title: ClassVar[str] = "history request"
    video: VideoId
    subject: Subject
    attribute: Attribute = None
    k: HistoryK = 100


class FactsAboutRequest(Request):
    """The facts of one source whose subject is one of these names (a multi-hop question's next hop)."""

    title: ClassVar[str] = "facts_about request"
    video: VideoId
    subjects: Annotated[tuple[Subject, ...], Field(min_length=1, max_length=50)]
    all_versions: AllVersions = False
    k: HistoryK = 20


MemoryId = Annotated[str, AfterValidator(_words), Field(min_length=1, max_length=500, description=(
    "A fact's memory_id (from history)."))]
FactState = Annotated[Literal["superseded", "current", "clear"], Field(description=(
    "'superseded': the fact does not hold (as if never said; the version it displaced holds again); 'current': "
    "it holds, whatever newer value comes; 'clear': back to what the sources say."))]
FactNote = Annotated[Annotated[str, Field(max_length=MAX_TEXT)] | None, Field(description=(
    "Why (kept with the correction and in its log)."))]


class CorrectFactRequest(Request):
    """An analyst's correction of one version of a fact (the rule: `m3graph.fact_versions`); undone by 'clear'."""

    title: ClassVar[str] = "correct_fact request"
    memory_id: MemoryId
    state: FactState
    note: FactNote = None


class ListVideosRequest(Request):
    title: ClassVar[str] = "list_videos request"


class StatsRequest(Request):
    title: ClassVar[str] = "stats request"
    video: Annotated[str, AfterValidator(_video)] | None = None


class VoteRequest(Request):
    title: ClassVar[str] = "vote request"
    a: EntityId
    b: EntityId
    verdict: Literal["same", "different"]
    note: Note = None


class UndoVoteRequest(Request):
    title: ClassVar[str] = "undo_vote request"
    vote_id: VoteId


class DeleteRequest(Request):
    title: ClassVar[str] = "delete request"
    kind: DeleteKind
    video: DeleteVideo = None
    clip: DeleteClip = None
    char_id: DeleteCharId = None

    @model_validator(mode="after")
    def _complete(self) -> DeleteRequest:
        if self.kind == "clip" and (self.video is None or self.clip is None):
            raise InvalidInputError("deleting a clip needs video and clip")
        if self.kind == "video" and self.video is None:
            raise InvalidInputError("deleting a video needs video")
        if self.kind == "character" and self.char_id is None:
            raise InvalidInputError("deleting a character needs char_id")
        return self


class IngestStatusRequest(Request):
    title: ClassVar[str] = "ingest_status request"
    job_id: JobId = None


__all__ = ["MAX_INDEX", "MAX_NEIGHBOURS", "MAX_ROUNDS", "AskRequest", "CharacterRequest", "CorrectFactRequest",
           "DeleteRequest",
           "FetchClipRequest", "IngestStatusRequest", "ListVideosRequest", "Request", "SearchRequest",
           "StatsRequest", "TimelineRequest", "UndoVoteRequest", "VoteRequest"]
