"""The search plan is the ranking statement's parameters, field for field, and each preset shapes them as the old
keyword paths did (graphdb/search_plan.py). The graph is asked nothing here: every case below is one whose scope
and server leave nothing open, and `_NoGraph` fails the test if the plan asks anyway."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from m3graph.cypher import query
from m3graph.errors import InvalidInputError
from m3graph.fact_versions import VersionView
from m3graph.graphdb.executor import Capabilities
from m3graph.graphdb.search_plan import (
    MAX_CLIP,
    RankingWeights,
    Scope,
    SearchPlan,
    SearchPreset,
    SearchSpec,
    build_plan,
    to_index_score,
)
from m3graph.service.requests import SearchRequest
from m3graph.settings import Settings

NEO4J_5 = Capabilities(version="5.26.12", edition="community")
NEO4J_2026 = Capabilities(version="2026.01.0", edition="community")


class _NoGraph:
    """A plan that needs no lookup must not make one; the scope's size, which the default pool grows with, is that
    of a small scope (`size`), and each time it is asked is counted."""

    def __init__(self, size: int = 100) -> None:
        self.size = size
        self.sized: list[tuple[Sequence[str] | None, int | None]] = []

    def scope_size(self, videos: Sequence[str] | None, before_clip: int | None) -> int:
        self.sized.append((videos, before_clip))
        return self.size

    def small_scope(self, videos: Sequence[str] | None, before_clip: int | None) -> bool:
        raise AssertionError(f"asked whether {videos} up to {before_clip} is small")

    def all_videos(self) -> list[str]:
        raise AssertionError("asked for every video")


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings()


def _vector(settings: Settings) -> list[float]:
    return np.random.default_rng(1).normal(size=settings.memory.text_dim).tolist()


def _plan(settings: Settings, caps: Capabilities = NEO4J_2026, scope: Scope | None = None, **spec: Any
          ) -> SearchPlan:
    return build_plan(SearchSpec(_vector(settings), **spec), scope or Scope(videos=["v"]), settings, caps, _NoGraph())


def test_the_plans_fields_are_the_statements_parameters() -> None:
    fields = {f.name for f in dataclasses.fields(SearchPlan)}
    assert fields == set(query("search/ranked_2026").params)
    assert fields - {"max_clip"} == set(query("search/ranked").params)


@pytest.mark.parametrize(("caps", "statement"), [(NEO4J_5, "search/ranked"), (NEO4J_2026, "search/ranked_2026")])
def test_a_plans_parameters_are_exactly_its_statements(settings: Settings, caps: Capabilities, statement: str) -> None:
    # An entity scope scans exactly on either server, so 5.26 needs no candidate count here.
    plan = _plan(settings, caps, Scope(videos=["v"], before_clip=3, entity_ids=[1]), text="harbour", mode="node")
    assert plan.statement == statement
    assert set(plan.params()) == set(query(statement).params)
    assert plan.max_clip == (3 if caps is NEO4J_2026 else None)
    assert _plan(settings, NEO4J_2026).max_clip == MAX_CLIP  # no before_clip: every clip


def test_the_preset_follows_mode_and_text(settings: Settings) -> None:
    assert SearchPreset.of("clip", "harbour", settings) is SearchPreset.CLIPS
    assert SearchPreset.of("node", "harbour", settings) is SearchPreset.MEMORIES
    assert SearchPreset.of("clip", None, settings) is SearchPreset.REFERENCE
    assert SearchPreset.of("node", "", settings) is SearchPreset.REFERENCE_MEMORIES
    off = settings.model_copy(update={"search": settings.search.model_copy(update={"hybrid": False})})
    assert SearchPreset.of("node", "harbour", off) is SearchPreset.REFERENCE_MEMORIES


def test_presets_shape_the_weights(settings: Settings) -> None:
    cfg, full = settings.search, RankingWeights.of(settings)
    assert (full.vector_weight, full.context_weight, full.speaker_weight) == (
        settings.search_vector_weight, cfg.context_weight, cfg.speaker_weight)
    assert full.under(SearchPreset.MEMORIES) == full
    assert full.under(SearchPreset.CLIPS) == dataclasses.replace(full, speaker_weight=0.0)  # it cost clip recall
    for preset in (SearchPreset.REFERENCE, SearchPreset.REFERENCE_MEMORIES):
        assert full.under(preset) == dataclasses.replace(full, context_weight=0.0, clip_prior=0.0, speaker_weight=0.0)
    assert cfg.context_weight > 0 and cfg.clip_prior > 0 and cfg.speaker_weight > 0  # so the cases above can fail


def test_hybrid_plans_read_the_named_things(settings: Settings) -> None:
    plan = _plan(settings, text="Where is the first PDF Ann shared in May 2023?", mode="node", k=7)
    assert plan.text is not None and plan.text.startswith("text:(") and '"pdf"' in plan.text
    assert plan.clip_text is not None and plan.clip_text.startswith("search_text:(")
    assert (plan.months, plan.years, plan.date_weight) == ([5], [2023], settings.search.date_weight)
    assert (plan.file_mimes, plan.file_order, plan.file_videos) == (["application/pdf"], "first", ["v"])
    assert "ann" in plan.words and plan.speaker_weight == settings.search.speaker_weight
    assert (plan.by_clip, plan.k, plan.exclude) == (False, 7, [])
    assert plan.min_score == to_index_score(settings.search_floor)
    no_month = _plan(settings, text="the harbour walk")
    assert (no_month.months, no_month.date_weight, no_month.speaker_weight, no_month.by_clip) == ([], 0.0, 0.0, True)


def test_reference_plans_ignore_the_text(settings: Settings) -> None:
    off = settings.model_copy(update={"search": settings.search.model_copy(update={"hybrid": False})})
    plan = _plan(off, text="harbour in May", mode="node")
    assert (plan.text, plan.clip_text, plan.words, plan.months) == (None, None, [], [])
    assert (plan.context_weight, plan.clip_prior, plan.speaker_weight) == (0.0, 0.0, 0.0)
    assert plan.min_score == to_index_score(-1.0)  # node mode without text: no floor unless asked
    assert _plan(off, mode="node", threshold=0.3).min_score == to_index_score(0.3)
    assert _plan(off).min_score == to_index_score(settings.search_floor)  # clip mode: the measured floor


def test_clip_mode_pages_and_pools(settings: Settings) -> None:
    plan = _plan(settings, text="harbour", k=3, exclude=["v#0", "v#1"], episodic_only=True)
    assert (plan.exclude, plan.k, plan.episodic_only) == (["v#0", "v#1"], 3, True)
    assert plan.n == max(settings.search.fusion_pool, 5 * 5)
    assert _plan(settings).k == settings.search.clip_topk
    assert _plan(settings, mode="node").k == settings.search.node_topk
    assert _plan(settings, mode="node", exclude=["v#0"]).exclude == []  # paging by clips shown is clip mode's


def _pool(settings: Settings, size: int, scope: Scope | None = None, **search: Any) -> tuple[int, _NoGraph]:
    graph = _NoGraph(size)
    tuned = settings.model_copy(update={"search": settings.search.model_copy(update=search)})
    plan = build_plan(SearchSpec(_vector(settings), text="harbour"), scope or Scope(videos=["v"], before_clip=7),
                      tuned, NEO4J_2026, graph)
    return plan.n, graph


def test_the_pool_grows_with_the_scope_between_its_floor_and_its_cap(settings: Settings) -> None:
    cfg = settings.search
    assert (cfg.fusion_pool, cfg.fusion_share, cfg.fusion_pool_max) == (300, 0.05, 1000)
    assert _pool(settings, 0)[0] == 300  # an empty or small scope keeps the floor
    assert _pool(settings, 6000)[0] == 300  # LoCoMo's and BEAM's single sources are below 6,000 memories
    assert _pool(settings, 12_345)[0] == 618  # 5 % of the scope, rounded up
    assert _pool(settings, 23_000)[0] == 1000  # a 10^7-token conversation: the cap
    assert _pool(settings, 10**7)[0] == 1000
    n, graph = _pool(settings, 12_345)
    assert graph.sized == [(["v"], 7)]  # the scope as the search sees it: its sources, up to its clip
    _, graph = _pool(settings, 12_345, Scope(videos=None))
    assert graph.sized == [(None, None)]  # no source named: the whole store
    n, graph = _pool(settings, 10**7, fusion_share=0.0)
    assert (n, graph.sized) == (300, [])  # share 0: the fixed pool, and nothing counted
    n, graph = _pool(settings, 10**7, fusion_pool=2000)
    assert (n, graph.sized) == (2000, [])  # a floor at or above the cap: nothing to count
    assert _pool(settings, 10**7, fusion_pool_max=4000)[0] == 4000


def test_versions_and_speakers_reach_the_plan(settings: Settings) -> None:
    view = VersionView(at=1.5e9)
    plan = _plan(settings, text="fruit", view=view, speakers=["  Ann  Lee", "bob", "BOB"])
    assert plan.view == view and (plan.all_versions, plan.as_of_at) == (False, 1.5e9)
    assert plan.speakers == ["ann lee", "bob"]
    assert plan.exact  # the vector index cannot filter by speaker
    assert _plan(settings, text="fruit").speakers is None


def test_an_empty_scope_plans_nothing(settings: Settings) -> None:
    assert _plan(settings, scope=Scope(videos=[])).empty
    assert not _plan(settings).empty


def test_a_request_reaches_the_spec_by_field_name(settings: Settings) -> None:
    request = SearchRequest(query="Where did <character_3> go?", videos=("v",), mode="node", k=5, threshold=0.2,
                            before_clip=4, speakers=("Ann",))
    spec = SearchSpec.of(dict(request), vector=_vector(settings), text="Where did go?", characters=[3])
    assert (spec.mode, spec.videos, spec.k, spec.threshold, spec.before_clip) == ("node", ("v",), 5, 0.2, 4)
    assert (spec.speakers, spec.characters, spec.text) == (("Ann",), [3], "Where did go?")


def test_a_bad_k_or_before_clip_is_refused_with_the_spec(settings: Settings) -> None:
    with pytest.raises(InvalidInputError, match="k must be"):
        SearchSpec(_vector(settings), k=0)
    with pytest.raises(InvalidInputError, match="before_clip"):
        SearchSpec(_vector(settings), before_clip=-1)
