"""Search filters on the real server: `speakers` keeps the lines the named speakers said (search/ranked.cypher.tmpl,
step 6), through the graph's search and through the request every front end builds."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from m3graph.errors import InvalidInputError
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipResult
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation, Session, Turn
from m3graph.service.requests import SearchRequest
from m3graph.service.search import run_search
from tests.helpers.graph import PlacedVectors, rng, text_dim, unit

CHAT = "filters-chat"
# Line -> its cosine to the query. Ann's first line is the closest; her third names Bob but is hers.
LINES = {"how was kayaking": 0.8, "Kayaking on Lake Tahoe": 0.6, "Bob said the lake": 0.7, "new paddle": 0.65,
         "Nice.": 0.0}


def _chat(mg: MemoryGraph) -> np.ndarray:
    """Two sessions of Ann Lee and Bob Stone: May's (Ann asks, Bob answers, Ann retells), June's (Bob's paddle)."""
    q = unit(text_dim(mg), rng(8))
    may = (Turn("D1:1", "Ann Lee", "Bob, how was kayaking on the weekend?"),
           Turn("D1:2", "Bob Stone", "Kayaking on Lake Tahoe was great."),
           Turn("D1:3", "Ann Lee", "Bob said the lake was cold."))
    june = (Turn("D2:1", "Bob Stone", "I bought a new paddle for the next kayaking trip."),
            Turn("D2:2", "Ann Lee", "Nice."))
    sessions = (Session(0, datetime(2023, 5, 8, 13, 0, tzinfo=UTC), may),
                Session(1, datetime(2023, 6, 8, 13, 0, tzinfo=UTC), june))
    ingest_conversation(mg, Conversation(CHAT, sessions, ("Ann Lee", "Bob Stone")), PlacedVectors(q, LINES))
    return q


def _said(results: Sequence[ClipResult]) -> list[str]:
    """Each memory's line as stored, speaker tag removed: "Bob Stone: Kayaking on ..."."""
    return [m.raw_text.split(" <speaker_")[0] + ":" + m.raw_text.split(">:", 1)[1] for r in results
            for m in r.memories]


def _nodes(mg: MemoryGraph, q: np.ndarray, **kw: Any) -> list[str]:
    return _said(mg.search.search(SearchSpec(q, mode="node", videos=[CHAT], k=10, **kw)))


def test_only_the_named_speakers_lines_rank(graph: MemoryGraph) -> None:
    q = _chat(graph)
    everyone = _nodes(graph, q)
    assert len(everyone) == 5 and everyone.count("Ann Lee: Nice.") == 1  # without the filter, every line
    bob = ["Bob Stone: Kayaking on Lake Tahoe was great.",
           "Bob Stone: I bought a new paddle for the next kayaking trip."]
    for names in (("Bob",), ("bob stone",), ("  BOB   Stone ",), ("Carol", "Bob")):
        assert sorted(_nodes(graph, q, speakers=names)) == sorted(bob), names
    # Hybrid: the full-text ranking is filtered too. Ann's line that names Bob is hers, not his.
    assert "Ann Lee: Bob said the lake was cold." in _nodes(graph, q, text="What did Bob say about the lake?")
    found = _nodes(graph, q, text="What did Bob say about the lake?", speakers=("Bob",))
    assert bob[0] in found and set(found) <= set(bob)
    assert sorted(_nodes(graph, q, speakers=("Ann", "Bob"))) == sorted(everyone)
    # A surname is not a first name, and nobody is called Carol: no line is anyone's.
    assert _nodes(graph, q, speakers=("Stone",)) == []
    assert _nodes(graph, q, speakers=("Carol",)) == []


def test_clip_mode_ranks_clips_by_the_speakers_lines_and_shows_them_whole(graph: MemoryGraph) -> None:
    q = _chat(graph)
    search = graph.search
    (top,) = search.search(SearchSpec(q, videos=[CHAT], k=1, threshold=0.0))
    assert top.clip_index == 0  # Ann's 0.8 line
    (bobs,) = search.search(SearchSpec(q, videos=[CHAT], k=1, threshold=0.0, speakers=["Bob"]))
    assert bobs.clip_index == 1 and bobs.score == pytest.approx(0.65, abs=1e-5)  # his 0.65 line beats his 0.6
    assert _said([bobs]) == ["Bob Stone: I bought a new paddle for the next kayaking trip.", "Ann Lee: Nice."]
    hybrid = search.search(SearchSpec(q, videos=[CHAT], k=2, text="kayaking paddle", speakers=["Bob"]))
    assert [r.clip_index for r in hybrid] == [1, 0]


def test_the_request_carries_speakers_to_the_statement(graph: MemoryGraph) -> None:
    q = _chat(graph)

    def embed(_: str) -> list[float]:
        return q.tolist()

    request = SearchRequest(query="kayaking", videos=(CHAT,), mode="node", k=10, speakers=("Bob",))
    assert set(_said(run_search(graph.search, embed, request))) == {
        "Bob Stone: Kayaking on Lake Tahoe was great.", "Bob Stone: I bought a new paddle for the next kayaking trip."}
    everyone = SearchRequest(query="kayaking", videos=(CHAT,), mode="node", k=10)
    assert "Ann Lee: Bob, how was kayaking on the weekend?" in _said(run_search(graph.search, embed, everyone))
    with pytest.raises(InvalidInputError, match="speakers"):
        SearchRequest(query="kayaking", speakers=("  ",))
