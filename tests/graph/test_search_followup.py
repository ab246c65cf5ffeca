"""The multi-hop follow-up search on the real server: a session the question shares no word or direction with is
found only through the words of the first hit (bench/search_followup.py)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.search_followup import FollowUpConfig, FollowUpSearch, followup_terms
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from tests.helpers.graph import add_clip, mem, near, rng, text_dim, unit, variant, with_settings

QUESTION = "Where did the family go camping?"


@pytest.fixture
def graph(graph: MemoryGraph) -> MemoryGraph:
    """The world's cosines are laid out for a vector floor of 0.25 and a vector weight of 0.4 (MiniLM's); the
    follow-up's mechanics do not depend on the text model, so they are pinned rather than taken from it."""
    return with_settings(graph, variant(graph.settings, search={"clip_threshold": 0.25, "vector_weight": 0.4}))


def _world(mg: MemoryGraph) -> np.ndarray:
    """Clip 0 answers the question and names the lake; clip 3 says what happened at the lake, in words and a
    direction the question does not share; clips 1, 2, 4 are weakly related chatter."""
    g = rng(7)
    q = unit(text_dim(mg), g)
    lines = {0: [("Melanie: We went camping at Lake Tahoe with the family last weekend.", 0.8)],
             1: [("Caroline: The weather was lovely, we stayed home and watched films.", 0.3)],
             2: [("Caroline: The beach is lovely this time of year.", 0.3)],
             3: [("Melanie: I painted the sunrise over Tahoe from our tent, my first landscape.", 0.0)],
             4: [("Caroline: Work has been busy, I barely slept this week.", 0.28)]}
    for clip, texts in lines.items():
        add_clip(mg, "mh", clip)
        mg.write_memories("mh", clip, [mem("episodic", t, near(q, cos, g)) for t, cos in texts]
                          + [mem("episodic", f"Caroline: filler line {clip}.", near(q, 0.05, g))])
    return q


def _clips(results: list) -> list[int]:
    return [r.clip_index for r in results]


def _ids(results: list) -> set[str]:
    return {m.raw_text for r in results for m in r.memories}


def test_second_session_is_found_only_through_the_follow_up(graph: MemoryGraph) -> None:
    q = _world(graph)
    painted = "Melanie: I painted the sunrise over Tahoe from our tent, my first landscape."
    off = FollowUpSearch(graph.search, FollowUpConfig())
    assert 3 not in _clips(off.search(SearchSpec(q, videos=["mh"], k=2, text=QUESTION)))
    assert painted not in _ids(off.search(SearchSpec(q, mode="node", videos=["mh"], k=3, text=QUESTION)))
    # Off is the plain search, call for call.
    assert off.search(SearchSpec(q, videos=["mh"], k=2, text=QUESTION)) == \
        graph.search.search(SearchSpec(q, videos=["mh"], k=2, text=QUESTION))
    # One seed: the weak chatter ranked after clip 0 would add its own words (as measured on the dev set, where
    # seeds beyond the first pull the follow-up towards other chatter).
    for strategy in ("terms", "feedback"):
        on = FollowUpSearch(graph.search, FollowUpConfig(strategy=strategy, seeds=1, clip_weight=0.5, node_slots=1))
        assert _clips(on.search(SearchSpec(q, videos=["mh"], k=2, text=QUESTION))) == [0, 3], strategy
        nodes = on.search(SearchSpec(q, mode="node", videos=["mh"], k=3, text=QUESTION))
        assert painted in _ids(nodes) and sum(len(r.memories) for r in nodes) == 3, strategy
        # The scope still binds: before_clip 2 never shows clip 3.
        assert 3 not in _clips(on.search(SearchSpec(q, videos=["mh"], before_clip=2, k=2, text=QUESTION)))


def test_without_question_text_the_follow_up_is_not_run(graph: MemoryGraph) -> None:
    q = _world(graph)
    on = FollowUpSearch(graph.search, FollowUpConfig(strategy="terms", clip_weight=0.5))
    assert on.search(SearchSpec(q, videos=["mh"], k=2)) == graph.search.search(SearchSpec(q, videos=["mh"], k=2))


def test_follow_up_words_leave_out_speakers_and_the_question(graph: MemoryGraph) -> None:
    q = _world(graph)
    seeds = [m for r in graph.search.search(SearchSpec(q, mode="node", videos=["mh"], k=2, text=QUESTION))
             for m in r.memories]
    words = followup_terms(QUESTION, seeds, 4)
    assert "tahoe" in words and "lake" in words
    assert not {"melanie", "caroline", "camping", "family"} & set(words)


@pytest.mark.parametrize("n", [1, 2])
def test_follow_up_takes_at_most_n_words(graph: MemoryGraph, n: int) -> None:
    q = _world(graph)
    seeds = [m for r in graph.search.search(SearchSpec(q, mode="node", videos=["mh"], k=2, text=QUESTION))
             for m in r.memories]
    assert len(followup_terms(QUESTION, seeds, n)) == n
