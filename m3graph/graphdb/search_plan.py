"""One search as one typed object per stage: what is asked (`SearchSpec`), how it ranks (`SearchPreset`,
`RankingWeights`) and what the ranking statement is given (`SearchPlan`), built by one function (`build_plan`).

Why: a search parameter used to be unpacked and re-packed at every layer (the request, `run_search`'s keyword
arguments, `search_clip`/`search_node`'s twelve, `_ranked`'s bare positionals, a 33-key dict). Now a request's
fields reach the spec by name (`SearchSpec.of`), the plan's fields ARE the parameters of `search/ranked` and its
2026 variant (tests/unit/test_search_plan.py checks the two sets are equal) and `MemorySearch.run` hands them to the
statement as they are. A new filter is a field of the request, a field of the spec and of the plan here, and a
clause of the statement (`speakers` was added that way).

What used to be booleans is named: a preset says whether whole clips or single memories rank and whether the
query's text takes part (hybrid) or only its vector does (the reference's ranking, §6.5; `reference=True` before).
The preset follows from the spec (its mode, and whether it has text while `search.hybrid` is on), as graphiti's
search_config_recipes names its configurations; every weight of the fusion is one `RankingWeights`, from
settings.search, shaped by the preset.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Literal, Protocol

import numpy as np

from m3graph.errors import InvalidInputError
from m3graph.fact_versions import VersionView
from m3graph.graphdb.executor import Capabilities
from m3graph.graphdb.query_text import lucene_query_terms, named_file_types, named_months, query_words
from m3graph.settings import SearchConfig, Settings

Mode = Literal["clip", "node"]
RANKED, RANKED_2026 = "search/ranked", "search/ranked_2026"
CURRENT = VersionView()  # what a search shows unless asked otherwise: facts as they hold now
MAX_CLIP = 2**63 - 1  # "no before_clip" inside the index filter, which takes no OR / IS NULL
MAX_K = 1000  # more results than any caller can read; a larger k is a mistake, not a request


def check_request(k: int | None, before_clip: int | None) -> None:
    """Refuses, naming the value, a k or before_clip no search can honour (checked before any query runs)."""
    if k is not None and not (isinstance(k, int | np.integer) and 1 <= k <= MAX_K):
        raise InvalidInputError(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
    if before_clip is not None and not (isinstance(before_clip, int | np.integer) and before_clip >= 0):
        raise InvalidInputError(f"before_clip must be a clip index >= 0, got {before_clip!r}")


def unit_vector(query: Sequence[float], dim: int) -> list[float]:
    """The unit query vector; a vector of the wrong size, NaN/infinite or all zeros is refused by name."""
    try:
        v = np.asarray(query, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidInputError("query vector: not a list of numbers") from None
    if v.size != dim:
        raise InvalidInputError(f"query vector has {v.size} dimensions; the text model's memories have {dim}")
    if not np.all(np.isfinite(v)):
        raise InvalidInputError("query vector contains NaN or infinity")
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        raise InvalidInputError("query vector is all zeros (no direction to search in)")
    return (v / norm).tolist()


def to_index_score(cosine: float) -> float:
    """A cosine on the vector index's scale, (1 + cos) / 2."""
    return (1.0 + cosine) / 2.0


@dataclass(frozen=True)
class Scope:
    """What one search may see: videos, `before_clip`, a character's entities, a time window (as clip keys).

    `videos=[]` is the empty scope (an unknown character, no clip in the time window): its plan runs nothing."""

    videos: list[str] | None = None
    before_clip: int | None = None
    entity_ids: list[int] | None = None
    clips: list[str] | None = None


@dataclass(frozen=True)
class SearchSpec:
    """What one search asks for, at the graph's level: the query's vector (and its text for the text rankings),
    clips or single memories, the scope, how many, the vector floor, clips already shown, which versions of facts.

    `speakers`: only lines said by these speakers of a conversation (a full or a first name, case ignored); clip
    mode ranks clips by those lines alone (and still shows each clip whole)."""

    vector: Sequence[float]
    _: KW_ONLY
    mode: Mode = "clip"
    text: str | None = None
    videos: Sequence[str] | None = None
    before_clip: int | None = None
    characters: Sequence[int] = ()
    since: datetime | None = None
    until: datetime | None = None
    k: int | None = None
    threshold: float | None = None
    exclude: Sequence[str] = ()  # clip keys already shown (clip mode's paging)
    episodic_only: bool = False
    view: VersionView = CURRENT
    speakers: Sequence[str] = ()

    def __post_init__(self) -> None:
        check_request(self.k, self.before_clip)

    @classmethod
    def of(cls, request: Mapping[str, Any], /, **given: Any) -> SearchSpec:
        """A spec from a request's fields (`dict(SearchRequest)`): those named like a field of the spec are taken
        as they are, so a new filter reaches the plan without being passed on by hand; `given` comes on top."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**({name: value for name, value in request.items() if name in names} | given))


@dataclass(frozen=True)
class Ranking:
    """What a preset turns on."""

    by_clip: bool  # rank whole clips (shown with all their memories), else single memories grouped by clip
    text: bool  # the text's rankings (BM25 of memories and of clip documents) and its named months, files, speakers
    neighbours: bool  # a memory takes a share of its neighbouring lines' scores, and of its clip's (clip prior)
    speaker_bonus: bool  # a line said by a speaker the query names gains `speaker_weight` (costs clip recall)
    floor_by_default: bool  # without a threshold, the vector cosine is floored at the text model's measured floor


class SearchPreset(Enum):
    """The named rankings. CLIPS and MEMORIES are the product's (the controller's search_clip and search_node with
    the question's text); REFERENCE is the reference's clip ranking (a clip scores its best memory's cosine alone)
    and REFERENCE_MEMORIES its node ranking (each memory its own cosine, no floor unless a threshold is given)."""

    CLIPS = Ranking(by_clip=True, text=True, neighbours=True, speaker_bonus=False, floor_by_default=True)
    MEMORIES = Ranking(by_clip=False, text=True, neighbours=True, speaker_bonus=True, floor_by_default=True)
    REFERENCE = Ranking(by_clip=True, text=False, neighbours=False, speaker_bonus=False, floor_by_default=True)
    REFERENCE_MEMORIES = Ranking(by_clip=False, text=False, neighbours=False, speaker_bonus=False,
                                 floor_by_default=False)

    @classmethod
    def of(cls, mode: Mode, text: str | None, settings: Settings) -> SearchPreset:
        """Hybrid when there is text and `search.hybrid` is on; the reference's ranking otherwise."""
        hybrid = bool(text and settings.search.hybrid)
        if mode == "node":
            return cls.MEMORIES if hybrid else cls.REFERENCE_MEMORIES
        return cls.CLIPS if hybrid else cls.REFERENCE


@dataclass(frozen=True)
class RankingWeights:
    """Every weight of the fused ranking (settings.search; search/ranked.cypher.tmpl says where each applies)."""

    vector_weight: float
    context_weight: float
    clip_text_weight: float
    clip_prior: float
    speaker_weight: float
    date_weight: float
    file_weight: float

    @classmethod
    def of(cls, settings: Settings) -> RankingWeights:
        cfg = settings.search
        return cls(vector_weight=settings.search_vector_weight, context_weight=cfg.context_weight,
                   clip_text_weight=cfg.clip_text_weight, clip_prior=cfg.clip_prior,
                   speaker_weight=cfg.speaker_weight, date_weight=cfg.date_weight, file_weight=cfg.file_weight)

    def under(self, preset: SearchPreset) -> RankingWeights:
        """The weights a preset ranks with: no neighbour share or clip prior without text, no speaker bonus
        outside MEMORIES. The date weight counts only when a month is named (`build_plan`)."""
        rules = preset.value
        return dataclasses.replace(self, context_weight=self.context_weight if rules.neighbours else 0.0,
                                   clip_prior=self.clip_prior if rules.neighbours else 0.0,
                                   speaker_weight=self.speaker_weight if rules.speaker_bonus else 0.0)


@dataclass(frozen=True, kw_only=True)
class SearchPlan:
    """The parameters of `search/ranked` (and of `search/ranked_2026`, which adds `max_clip`), field for field.

    `max_clip` is set only where the vector index filters inside the index (Neo4j 2026.x): it chooses the 2026
    variant (`statement`). Rendering reads the fact-version fields back (`view`); `videos=[]` runs nothing."""

    query: list[float]
    text: str | None  # the memories' full-text query (None: no BM25 ranking)
    clip_text: str | None  # the clip documents' full-text query
    videos: list[str] | None
    before_clip: int | None
    max_clip: int | None = None
    entity_ids: list[int] | None
    clips: list[str] | None
    exact: bool  # an exact cosine scan of the filtered memories instead of the vector index
    min_score: float  # the vector floor on the index's scale
    n: int
    n_raw: int
    vector_weight: float
    context_weight: float
    clip_text_weight: float
    clip_prior: float
    words: list[str]
    speaker_weight: float
    months: list[int]
    years: list[int]
    date_weight: float
    file_videos: list[str]
    file_mimes: list[str]
    file_kinds: list[str]
    file_order: str  # "first", "last" or "all" (query_text.named_file_types)
    file_weight: float
    by_clip: bool
    exclude: list[str]
    k: int
    episodic_only: bool
    all_versions: bool
    as_of_at: float | None
    as_of_video: str | None
    as_of_order: float | None
    speakers: list[str] | None = None  # lowercased names; hits are lines said by those speakers

    @property
    def statement(self) -> str:
        return RANKED if self.max_clip is None else RANKED_2026

    def params(self) -> dict[str, Any]:
        """The statement's parameters, exactly (`max_clip` only for the 2026 variant)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if self.max_clip is None:
            del out["max_clip"]
        return out

    @property
    def view(self) -> VersionView:
        return VersionView(all_versions=self.all_versions, at=self.as_of_at, video=self.as_of_video,
                           order=self.as_of_order)

    @property
    def empty(self) -> bool:
        return self.videos is not None and not self.videos


class GraphFacts(Protocol):
    """What a plan may need to read from the graph (`MemorySearch` answers it)."""

    def scope_size(self, videos: Sequence[str] | None, before_clip: int | None) -> int:
        """The memories a search of the scope may find (every memory when it names no source)."""

    def small_scope(self, videos: Sequence[str] | None, before_clip: int | None) -> bool:
        """Whether the scope's candidates are few enough for an exact scan (5.26's path)."""

    def all_videos(self) -> list[str]:
        """Every source's id."""


def _speakers(names: Sequence[str]) -> list[str] | None:
    """Names as the statement compares them (lowercased, single-spaced); None: no speaker filter."""
    wanted = sorted({" ".join(n.split()).lower() for n in names} - {""})
    return wanted or None


def fusion_pool(cfg: SearchConfig, scope: Scope, graph: GraphFacts) -> int:
    """Candidates taken from each ranking: `fusion_pool`, or `fusion_share` of the scope's memories when that is
    more (at most `fusion_pool_max`). Why: the pools are the best of the whole scope before fusion, so a fixed pool
    is a smaller and smaller share of a growing conversation, and a line ranked fairly by both rankings falls out
    of both (a 10^7-token source lost 17 points of its answer rate at 300, 8 at 1,000: docs/scaling.md)."""
    if cfg.fusion_share <= 0 or cfg.fusion_pool_max <= cfg.fusion_pool:
        return cfg.fusion_pool
    wanted = math.ceil(cfg.fusion_share * graph.scope_size(scope.videos, scope.before_clip))
    return max(cfg.fusion_pool, min(cfg.fusion_pool_max, wanted))


def build_plan(spec: SearchSpec, scope: Scope, settings: Settings, caps: Capabilities,
               graph: GraphFacts) -> SearchPlan:
    """The statement's parameters for one search. `graph` is asked only what the settings and the server leave
    open: the scope's size where the pool grows with it, whether a 5.26 scope is small enough to scan exactly,
    and every source's id where a scan or a named file type needs them and the scope names none."""
    cfg = settings.search
    preset = SearchPreset.of(spec.mode, spec.text, settings)
    rules = preset.value
    text = spec.text if rules.text else None
    k = spec.k or (cfg.clip_topk if rules.by_clip else cfg.node_topk)
    floor = settings.search_floor if spec.threshold is None else spec.threshold
    if spec.threshold is None and not rules.floor_by_default:
        floor = -1.0
    months, years = named_months(text) if text and cfg.date_weight > 0 else ([], [])
    file_kinds, file_mimes, file_order = named_file_types(text) if text and cfg.file_weight > 0 else ([], [], "all")
    speakers = _speakers(spec.speakers)
    weights = RankingWeights.of(settings).under(preset)
    in_index = (caps.vector_filters and caps.search_clause and cfg.in_index_filter
                and (scope.videos is None or len(scope.videos) <= cfg.in_index_max_videos))
    # A filter the vector index cannot apply (a character, a time window, a speaker) scans the scope exactly.
    exact = scope.entity_ids is not None or scope.clips is not None or speakers is not None or (
        not in_index and graph.small_scope(scope.videos, scope.before_clip))
    videos = scope.videos
    if exact and videos is None:
        videos = graph.all_videos()
    exclude = list(spec.exclude) if rules.by_clip else []  # paging by clips shown is clip mode's
    n = max(fusion_pool(cfg, scope, graph), 5 * (k + len(exclude)))
    filtered = scope.videos is not None or scope.before_clip is not None
    view = spec.view
    return SearchPlan(
        query=unit_vector(spec.vector, settings.memory.text_dim), text=lucene_query_terms(text) if text else None,
        clip_text=lucene_query_terms(text, "search_text") if text else None, videos=videos,
        before_clip=scope.before_clip,
        max_clip=(MAX_CLIP if scope.before_clip is None else scope.before_clip) if in_index else None,
        entity_ids=scope.entity_ids, clips=scope.clips, exact=exact, min_score=to_index_score(floor), n=n,
        n_raw=min(max(cfg.max_index_candidates, n), n * cfg.overfetch) if filtered else n,
        vector_weight=weights.vector_weight, context_weight=weights.context_weight,
        clip_text_weight=weights.clip_text_weight, clip_prior=weights.clip_prior,
        words=query_words(text) if text else [], speaker_weight=weights.speaker_weight, months=months, years=years,
        date_weight=weights.date_weight if months else 0.0,
        file_videos=(videos if videos is not None else graph.all_videos()) if file_kinds or file_mimes else [],
        file_mimes=file_mimes, file_kinds=file_kinds, file_order=file_order,
        file_weight=weights.file_weight, by_clip=rules.by_clip, exclude=exclude, k=k,
        episodic_only=spec.episodic_only, all_versions=view.all_versions, as_of_at=view.at, as_of_video=view.video,
        as_of_order=view.order, speakers=speakers)


__all__ = ["CURRENT", "MAX_K", "GraphFacts", "Ranking", "RankingWeights", "Scope", "SearchPlan", "SearchPreset",
           "SearchSpec", "build_plan", "fusion_pool", "check_request", "to_index_score", "unit_vector"]
