"""Named things in a hybrid query move the ranking (graphdb/search.py, search/ranked.cypher): a month the query names
lifts the clips that started then; a speaker it names lifts that speaker's lines in search_node only."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pytest

from m3graph.graphdb.query_text import named_months, query_words
from m3graph.graphdb.search import MemorySearch
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo, ClipResult
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation, Session, Turn
from tests.helpers.graph import PlacedVectors, mem, near, rng, text_dim, unit, variant, with_settings


def _top(results: Sequence[ClipResult]) -> str:
    """The one memory of a search_node with k=1."""
    (only,) = [m.text for r in results for m in r.memories]
    return only


def _kayak_chat(mg: MemoryGraph) -> np.ndarray:
    """One session: Ann asks about the kayak trip (closest to the query), Bob says where he went."""
    q = unit(text_dim(mg), rng(8))
    turns = (Turn("D1:1", "Ann", "Bob, how was kayaking on the weekend?"),
             Turn("D1:2", "Bob", "Kayaking on Lake Tahoe was great."),
             Turn("D1:3", "Ann", "I stayed home and read."))
    conv = Conversation("kayak-chat", (Session(0, datetime(2023, 5, 8, 13, 0, tzinfo=UTC), turns),), ("Ann", "Bob"))
    ingest_conversation(mg, conv, PlacedVectors(q, {"how was kayaking": 0.8, "Kayaking on Lake": 0.7}))
    return q


def test_search_node_prefers_the_named_speakers_lines(graph: MemoryGraph) -> None:
    q = _kayak_chat(graph)
    s = graph.search
    question = "Where did Bob go kayaking?"
    off = with_settings(graph, variant(graph.settings, search={"speaker_weight": 0.0})).search
    assert _top(off.search(SearchSpec(q, mode="node", videos=["kayak-chat"], k=1, text=question))).startswith("Ann")
    top = _top(s.search(SearchSpec(q, mode="node", videos=["kayak-chat"], k=1, text=question)))
    assert top.startswith("Bob <character_") and "Lake Tahoe" in top
    # A query that names every speaker of the scope favours nobody; search_clip never takes the bonus.
    both = "Where did Ann and Bob go kayaking?"
    assert _top(s.search(SearchSpec(q, mode="node", videos=["kayak-chat"], k=1, text=both))).startswith("Ann")
    assert [r.rank for r in s.search(SearchSpec(q, videos=["kayak-chat"], k=1, text=question))] == \
        [r.rank for r in off.search(SearchSpec(q, videos=["kayak-chat"], k=1, text=question))]
    # Without text (the reference's ranking) names are not read at all.
    assert _top(s.search(SearchSpec(q, mode="node", videos=["kayak-chat"], k=1))).startswith("Ann")


def _dated_world(mg: MemoryGraph) -> np.ndarray:
    """Video h: a harbour line in May's clip, three better ones in June's (June wins on evidence alone)."""
    g = rng(21)
    q = unit(text_dim(mg), g)
    for i, month in enumerate((5, 6, 7)):
        mg.upsert_clip(ClipInfo(source_id="h", clip_index=i, start_s=i * 60.0, end_s=i * 60.0 + 60,
                                started_at=datetime(2023, month, 1, 10, 0, tzinfo=UTC)))
    mg.write_memories("h", 0, [mem("episodic", "Ann: I walked to the harbour.", near(q, 0.70, g)),
                               mem("episodic", "Ben: Nice weather today.", near(q, -0.2, g))])
    mg.write_memories("h", 1, [mem("episodic", f"Ann: the harbour walk, part {i}.", near(q, c, g))
                               for i, c in enumerate((0.75, 0.74, 0.73))])
    mg.write_memories("h", 2, [mem("episodic", "Ben: my zanzibar trip was great.", near(q, -0.1, g))])
    return q


def test_a_named_month_lifts_the_clips_that_started_then(graph: MemoryGraph) -> None:
    q = _dated_world(graph)
    s = graph.search
    assert [r.clip_index for r in s.search(SearchSpec(q, videos=["h"], k=1, text="the harbour walk"))] == [1]
    may = "the harbour walk in May 2023"
    assert [r.clip_index for r in s.search(SearchSpec(q, videos=["h"], k=1, text=may))] == [0]
    off = with_settings(graph, variant(graph.settings, search={"date_weight": 0.0})).search
    assert [r.clip_index for r in off.search(SearchSpec(q, videos=["h"], k=1, text=may))] == [1]

    def ranks(search: MemorySearch, text: str) -> dict[int, float | None]:
        return {r.clip_index: r.rank for r in search.search(SearchSpec(q, videos=["h"], k=3, text=text))}

    on, without = ranks(s, "the harbour walk in May 2023"), ranks(off, "the harbour walk in May 2023")
    assert on[0] == pytest.approx(without[0] + 0.5) and on[1] == pytest.approx(without[1])  # date_weight 0.5
    # search_node: May's line takes its clip's lifted score as its prior.
    node_on, node_off = (
        {r.clip_index: r.rank for r in x.search(SearchSpec(q, mode="node", videos=["h"], k=4, text=may))}
        for x in (s, off))
    assert node_on[0] > node_off[0]
    # Another year or the verb "may": ranked as with the weight off.
    for text in ("the harbour walk in May 2021", "may the harbour walk"):
        assert ranks(s, text) == ranks(off, text), text


@pytest.mark.parametrize(("text", "months", "years"), [
    ("What did Maria do on 31 July, 2023?", [7], [2023]),
    ("in May and june of 2022", [5, 6], [2022]),
    ("What may Mel do in may?", [], []),  # "may" is a verb unless capitalised
    ("What happened in 2023?", [], []),  # a year alone names no clip
    ("Mayday in Junebug", [], []),  # whole words only
])
def test_named_months(text: str, months: list[int], years: list[int]) -> None:
    assert named_months(text) == (months, years)


def test_query_words_are_lowercased_and_bounded() -> None:
    assert query_words("Where did Bob, bob and ANN go?") == ["where", "did", "bob", "and", "ann", "go"]
    assert len(query_words(" ".join(f"w{i}" for i in range(200)))) == 64
