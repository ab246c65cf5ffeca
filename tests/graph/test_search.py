"""The controller's search tools on the real server: rendering, time filters, paging, both search paths."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pytest

from m3graph.graphdb.query_text import lucene_phrase, lucene_phrase_terms, lucene_query_terms
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo, ClipResult
from m3graph.settings import BGE_TEXT_MODEL, PACKAGED_TEXT_MODEL, TEXT_MODEL_FLOORS, TEXT_MODEL_VECTOR_WEIGHTS, Settings
from tests.helpers.graph import (
    add_clip,
    face_cluster,
    face_dim,
    mem,
    near,
    rng,
    set_next_entity_id,
    text_dim,
    unit,
    variant,
    with_settings,
)

# Clip i's best memory has this cosine to the query.
CLIP_COS = [0.9, 0.8, 0.7, 0.6, 0.55]


@dataclass
class World:
    query: np.ndarray
    face_1: int
    face_12: int
    char_1: int
    char_12: int


def _world(mg: MemoryGraph) -> World:
    """Video v, clips 0..4 registered out of order; face_1 seen in clip 0, face_12 in clip 1."""
    g = rng(3)
    for i in (3, 0, 4, 2, 1):
        add_clip(mg, "v", i)
    set_next_entity_id(mg, 1)
    (f1,) = mg.resolve_faces("v", 0, [face_cluster(0, unit(face_dim(mg), g), g)])
    set_next_entity_id(mg, 12)
    (f12,) = mg.resolve_faces("v", 1, [face_cluster(0, unit(face_dim(mg), g), g)])
    assert (f1.entity_id, f12.entity_id) == (1, 12)
    q = unit(text_dim(mg), g)
    for i, cos in enumerate(CLIP_COS):
        batch = [mem("episodic", f"Event {i}: <face_1> talks to <face_12>.", near(q, cos, g)),
                 mem("episodic", f"Event {i}: background.", near(q, 0.1, g))]
        if i == 3:
            batch.append(mem("semantic", "<face_1>'s name is Lily.", near(q, 0.2, g)))
            batch.append(mem("semantic", "<face_12>'s name is Bob.", near(q, 0.2, g)))
        if i == 4:
            batch.append(mem("semantic", "Equivalence: <face_1>, <face_12>", near(q, 0.99, g)))
        mg.write_memories("v", i, batch)
    chars = mg.characters_of([1, 12])
    return World(q, 1, 12, chars[1], chars[12])


def _clips(results: list[ClipResult]) -> list[int]:
    return [r.clip_index for r in results]


def test_tags_render_token_exactly(graph: MemoryGraph) -> None:
    w = _world(graph)
    assert w.char_1 != w.char_12
    (clip,) = graph.search.fetch_clip("v", 2)
    first = clip.memories[0]
    assert first.raw_text == "Event 2: <face_1> talks to <face_12>."
    assert first.text == f"Event 2: <character_{w.char_1}> talks to <character_{w.char_12}>."
    assert [m.order_in_clip for m in clip.memories] == [0, 1]
    # Same through search_node (another query file renders the tags).
    nodes = graph.search.search(SearchSpec(w.query, mode="node", videos=["v"], k=1))
    assert nodes[0].memories[0].text == f"Event 0: <character_{w.char_1}> talks to <character_{w.char_12}>."


def test_equivalence_statements_are_never_shown(graph: MemoryGraph) -> None:
    w = _world(graph)
    for results in (graph.search.fetch_clip("v", 4),
                    graph.search.search(SearchSpec(w.query, mode="node", videos=["v"])),
                    graph.search.search(SearchSpec(w.query, videos=["v"], k=5))):
        assert not any(m.raw_text.startswith("Equivalence") for r in results for m in r.memories)


def test_before_clip_hides_the_future(graph: MemoryGraph) -> None:
    w = _world(graph)
    s = graph.search
    assert _clips(s.search(SearchSpec(w.query, videos=["v"], before_clip=2, k=5, threshold=-1))) == [0, 1, 2]
    assert _clips(s.search(SearchSpec(w.query, before_clip=2, k=5, threshold=-1))) == [0, 1, 2]  # index path
    assert max(_clips(s.search(SearchSpec(w.query, mode="node", videos=["v"], before_clip=2)))) == 2
    assert max(_clips(s.search(SearchSpec(w.query, mode="node", before_clip=2)))) == 2
    assert s.fetch_clip("v", 3, before_clip=2) == []
    assert _clips(s.fetch_clip("v", 2, before_clip=2, before=2, after=2)) == [0, 1, 2]
    assert s.characters_named("Lily", before_clip=2) == []
    assert s.characters_named("Lily", before_clip=3) == [(w.char_1, 1)]


def test_search_clip_pages_through_unseen_clips(graph: MemoryGraph) -> None:
    w = _world(graph)
    s = graph.search
    first = s.search(SearchSpec(w.query, videos=["v"]))  # defaults: top 2, cosine >= 0.5
    assert _clips(first) == [0, 1]
    assert [r.score for r in first] == pytest.approx(CLIP_COS[:2], abs=1e-5)
    assert all(len(r.memories) == 2 for r in first)  # every memory of the clip, equivalences excluded
    shown = [f"v#{r.clip_index}" for r in first]
    assert _clips(s.search(SearchSpec(w.query, videos=["v"], exclude=shown))) == [2, 3]
    assert _clips(s.search(SearchSpec(w.query, videos=["v"], exclude=[*shown, "v#2", "v#3"]))) == [4]
    assert s.search(SearchSpec(w.query, videos=["v"], exclude=[f"v#{i}" for i in range(5)])) == []
    assert _clips(s.search(SearchSpec(w.query, videos=["v"], threshold=0.75, k=5))) == [0, 1]
    assert _clips(s.search(SearchSpec(w.query, videos=["v"], episodic_only=True, k=5))) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("path", ["index-post-filter", "in-index-filter"])
def test_exact_and_index_paths_agree(graph: MemoryGraph, path: str) -> None:
    w = _world(graph)
    # exact: the 5.26 path with a small candidate set; against the index with its hits filtered (5.26), or
    # filtered inside the index (the default on 2026.x; the same as post-filtering on a 5.26 server).
    exact_search = with_settings(graph, variant(graph.settings, search={"in_index_filter": False})).search
    overrides = {"exact_scan_limit": 0} | ({"in_index_filter": False} if path == "index-post-filter" else {})
    index = with_settings(graph, variant(graph.settings, search=overrides)).search

    def ranked(results: list[ClipResult]) -> list[tuple[int, float]]:
        return sorted(((r.clip_index, round(r.score or 0.0, 4)) for r in results), key=lambda x: -x[1])

    for kw in ({"k": 2}, {"k": 4}, {"k": 5, "before_clip": 3}, {"k": 3, "exclude": ["v#1"]}):
        exact = exact_search.search(SearchSpec(w.query, videos=["v"], **kw))
        approx = index.search(SearchSpec(w.query, videos=["v"], **kw))
        assert ranked(exact) == ranked(approx), kw
        assert exact == approx
    exact_nodes = exact_search.search(SearchSpec(w.query, mode="node", videos=["v"], k=6))
    index_nodes = index.search(SearchSpec(w.query, mode="node", videos=["v"], k=6))
    assert [[m.memory_id for m in r.memories] for r in exact_nodes] == \
           [[m.memory_id for m in r.memories] for r in index_nodes]


def test_search_scoped_to_a_character(graph: MemoryGraph) -> None:
    w = _world(graph)
    add_clip(graph, "v", 5)
    graph.write_memories("v", 5, [mem("episodic", "<face_12> leaves alone.", near(w.query, 0.95, rng(5)))])
    only_12 = graph.search.search(SearchSpec(w.query, videos=["v"], characters=[w.char_12], k=1))
    assert _clips(only_12) == [5]
    nodes = graph.search.search(SearchSpec(w.query, mode="node", videos=["v"], characters=[w.char_1], k=50))
    assert all("<face_1>" in m.raw_text for r in nodes for m in r.memories)
    assert graph.search.search(SearchSpec(w.query, characters=[9999])) == []


def test_hybrid_search_node_uses_the_text(graph: MemoryGraph) -> None:
    w = _world(graph)
    g = rng(11)
    add_clip(graph, "v", 5)
    graph.write_memories("v", 5, [mem("episodic", "Someone opens a red umbrella.", near(w.query, 0.0, g))])
    plain = graph.search.search(SearchSpec(w.query, mode="node", videos=["v"], k=2))
    assert not any("umbrella" in m.text for r in plain for m in r.memories)
    hybrid = graph.search.search(SearchSpec(w.query, mode="node", videos=["v"], k=2, text="umbrella"))
    texts = [m.text for r in hybrid for m in r.memories]
    assert any("umbrella" in t for t in texts)
    assert any(t.startswith("Event 0") for t in texts)  # the best vector hit stays


def test_characters_named(graph: MemoryGraph) -> None:
    w = _world(graph)
    s = graph.search
    assert s.characters_named("Lily") == [(w.char_1, 1)]
    assert s.characters_named("lily", videos=["v"]) == [(w.char_1, 1)]
    assert s.characters_named("Bob") == [(w.char_12, 1)]
    assert s.characters_named("Lily", videos=["other"]) == []
    facts = s.character_facts(w.char_1)
    assert [m.raw_text for r in facts for m in r.memories] == ["<face_1>'s name is Lily."]


HOSTILE = ['Lily" OR *:*', "*:*", "Lily OR Bob", "name:Bob", "AND", "Lily AND", "NOT", "(Bob", "Bob~", "\\", "  ",
           'Bob" OR "Lily']


def test_fulltext_input_is_never_lucene_syntax(graph: MemoryGraph) -> None:
    w = _world(graph)
    for name in HOSTILE:
        found = graph.search.characters_named(name)
        allowed = ([], [(w.char_12, 1)]) if "Bob" in name else ([],)
        assert found in allowed, f"{name!r} matched {found}"
        # The same strings as hybrid search text: no error, and no more than k results.
        nodes = graph.search.search(SearchSpec(w.query, mode="node", videos=["v"], k=3, text=name))
        assert sum(len(r.memories) for r in nodes) <= 3, name


def test_lucene_phrase_escapes_operators() -> None:
    assert lucene_phrase('Lily" OR *:*') == '"Lily\\" OR \\*\\:\\*"'
    assert lucene_phrase_terms("Lily AND (Bob") == '"Lily" "AND" "\\(Bob"'
    assert lucene_phrase_terms("   ") == '""'


def test_fetch_clip_follows_the_next_chain(graph: MemoryGraph) -> None:
    _world(graph)
    s = graph.search
    assert _clips(s.fetch_clip("v", 2)) == [2]
    assert _clips(s.fetch_clip("v", 2, before=1, after=1)) == [1, 2, 3]
    assert _clips(s.fetch_clip("v", 2, before=2)) == [0, 1, 2]
    assert _clips(s.fetch_clip("v", 2, after=9)) == [2, 3, 4]
    assert _clips(s.fetch_clip("v", 0, before=3, after=1)) == [0, 1]
    assert s.fetch_clip("v", 42) == []
    (c,) = s.fetch_clip("v", 1)
    assert (c.start_s, c.end_s) == (30.0, 60.0)
    # After a deletion the chain is re-linked around the gap.
    graph.delete_clip("v", 2)
    assert _clips(s.fetch_clip("v", 1, after=2)) == [1, 3]


# -- hybrid ranking (vector floored + full text, fused) ------------------------------------------------------
def _hybrid_world(mg: MemoryGraph) -> np.ndarray:
    """Video h: clip 0 one good line; clip 1 three fair lines; clip 2 a rare word with an unrelated vector."""
    g = rng(21)
    q = unit(text_dim(mg), g)
    starts = {0: "2023-05-01T10:00:00+00:00", 1: "2023-06-01T10:00:00+00:00", 2: "2023-07-01T10:00:00+00:00"}
    for i, when in starts.items():
        mg.upsert_clip(ClipInfo(source_id="h", clip_index=i, start_s=i * 60.0, end_s=i * 60.0 + 60,
                                started_at=datetime.fromisoformat(when)))
    mg.write_memories("h", 0, [mem("episodic", "Ann: I walked to the harbour.", near(q, 0.80, g)),
                               mem("episodic", "Ben: Nice weather today.", near(q, -0.2, g))])
    mg.write_memories("h", 1, [mem("episodic", f"Ann: the harbour walk, part {i}.", near(q, c, g))
                               for i, c in enumerate((0.75, 0.74, 0.73))])
    mg.write_memories("h", 2, [mem("episodic", "Ben: my zanzibar trip was great.", near(q, -0.1, g)),
                               mem("episodic", "Ann: sounds good.", near(q, -0.3, g))])
    return q


def test_clip_score_sums_the_best_few_memories(graph: MemoryGraph) -> None:
    q = _hybrid_world(graph)
    s = graph.search
    # The reference's ranking (best memory): clip 0. Fused evidence: clip 1's three fair lines beat one good line.
    assert _clips(s.search(SearchSpec(q, videos=["h"], k=1))) == [0]
    assert _clips(s.search(SearchSpec(q, videos=["h"], k=1, text="harbour"))) == [1]
    (best,) = s.search(SearchSpec(q, videos=["h"], k=1, text="harbour"))
    assert best.score == pytest.approx(0.75, abs=1e-5)  # the clip's best cosine is what is shown


def test_full_text_finds_what_the_vector_floor_drops(graph: MemoryGraph) -> None:
    q = _hybrid_world(graph)
    s = graph.search
    vector_only = s.search(SearchSpec(q, videos=["h"], k=5))
    assert 2 not in _clips(vector_only)  # every line of clip 2 is below the floor
    hybrid = s.search(SearchSpec(q, videos=["h"], k=3, text="Where did Ben go on his Zanzibar trip?"))
    assert 2 in _clips(hybrid)
    (clip_2,) = [r for r in hybrid if r.clip_index == 2]
    assert clip_2.score is None  # found by full text only: no cosine above the floor to show
    nodes = s.search(SearchSpec(q, mode="node", videos=["h"], k=5, text="zanzibar"))
    assert "Ben: my zanzibar trip was great." in [m.text for r in nodes for m in r.memories]
    # The floor is the vector's only: a caller's high floor leaves the full-text hit in.
    strict = s.search(SearchSpec(q, videos=["h"], k=3, text="zanzibar", threshold=0.99))
    assert _clips(strict) == [2]
    assert s.search(SearchSpec(q, videos=["h"], k=3, text="what is it", threshold=0.99)) == []  # only stop words


def test_hybrid_keeps_scope_paging_and_time_window(graph: MemoryGraph) -> None:
    q = _hybrid_world(graph)
    s = graph.search
    assert _clips(s.search(SearchSpec(q, videos=["h"], k=5, text="harbour", before_clip=0))) == [0]
    first = s.search(SearchSpec(q, videos=["h"], k=1, text="harbour zanzibar"))
    shown = [f"h#{r.clip_index}" for r in first]
    second = s.search(SearchSpec(q, videos=["h"], k=5, text="harbour zanzibar", exclude=shown))
    assert set(_clips(first)).isdisjoint(_clips(second)) and len(first) + len(second) == 3
    assert s.search(SearchSpec(q, videos=["h"], k=5, text="harbour", exclude=["h#0", "h#1", "h#2"])) == []
    june = datetime.fromisoformat("2023-06-01T00:00:00+00:00")
    july = datetime.fromisoformat("2023-07-01T00:00:00+00:00")
    windowed = s.search(SearchSpec(q, videos=["h"], k=5, text="harbour zanzibar", since=june, until=july))
    assert _clips(windowed) == [1]
    assert windowed[0].started_at == datetime.fromisoformat("2023-06-01T10:00:00+00:00")
    # No harbour line from July on.
    assert s.search(SearchSpec(q, mode="node", videos=["h"], k=10, text="harbour", since=july)) == []
    assert all(r.clip_index == 2
               for r in s.search(SearchSpec(q, mode="node", videos=["h"], k=10, text="zanzibar", since=july)))
    assert s.search(SearchSpec(q, videos=["h"], k=5, text="harbour",
                               until=datetime.fromisoformat("2020-01-01T00:00Z"))) == []
    # Every path (exact scan, index hits filtered after, filtered inside the index on 2026.x) ranks the same.
    exact = with_settings(graph, variant(graph.settings, search={"in_index_filter": False})).search
    for overrides in ({"exact_scan_limit": 0, "in_index_filter": False}, {"exact_scan_limit": 0}):
        index = with_settings(graph, variant(graph.settings, search=overrides)).search
        for kw in ({"k": 1}, {"k": 3}, {"k": 3, "before_clip": 1}):
            assert exact.search(SearchSpec(q, videos=["h"], text="harbour zanzibar", **kw)) == \
                index.search(SearchSpec(q, videos=["h"], text="harbour zanzibar", **kw)), (overrides, kw)
        assert exact.search(SearchSpec(q, mode="node", videos=["h"], k=4, text="harbour")) == \
            index.search(SearchSpec(q, mode="node", videos=["h"], k=4, text="harbour")), overrides


def _search_text(mg: MemoryGraph, key: str) -> str:
    with mg.ex.session() as session:
        return session.run("MATCH (c:Clip {clip_key: $k}) RETURN c.search_text AS t", k=key).single()["t"]


def test_clip_search_text_follows_its_memories(graph: MemoryGraph) -> None:
    q = _hybrid_world(graph)
    g = rng(5)
    assert _search_text(graph, "h#1") == ("1 June 2023\n" + "".join(f"Ann: the harbour walk, part {i}.\n"
                                                                     for i in range(3)))
    # Re-memorizing a clip replaces its document.
    graph.write_memories("h", 1, [mem("episodic", "Ann: the harbour walk, part 0.", near(q, 0.75, g))])
    assert _search_text(graph, "h#1") == "1 June 2023\nAnn: the harbour walk, part 0.\n"
    # A fact first said in clip 0 and said again in clip 1 lives in clip 0; when clip 0 no longer says it, it moves
    # to clip 1, and so does its text.
    for i in range(2):
        add_clip(graph, "m", i)
    fact = near(q, 0.5, g)
    graph.write_memories("m", 0, [mem("semantic", "Ann likes green tea.", fact)])
    graph.write_memories("m", 1, [mem("semantic", "Ann likes green tea.", fact)])
    assert "green tea" not in _search_text(graph, "m#1")
    graph.write_memories("m", 0, [])
    assert (_search_text(graph, "m#0"), _search_text(graph, "m#1")) == ("", "Ann likes green tea.\n")
    w = _world(graph)  # video v: undated clips, memories that mention faces
    assert _search_text(graph, "v#0").startswith("Event 0: <face_1> talks to <face_12>.\n")
    # Deleting a character deletes its memories, and their text leaves every clip's document.
    graph.delete_character(w.char_1)
    assert "talks to" not in _search_text(graph, "v#0")
    assert _search_text(graph, "v#0") == "Event 0: background.\n"


def test_clip_document_ranks_the_clip_that_covers_the_question(graph: MemoryGraph) -> None:
    """Two clips with one equally good line each: the clip whose other lines hold the rest of the question wins."""
    g = rng(9)
    q = unit(text_dim(graph), g)
    for i in range(2):
        add_clip(graph, "d", i)
    filler = [mem("episodic", f"Ben: filler line {i}.", near(q, 0.0, g)) for i in range(2)]
    graph.write_memories("d", 0, [mem("episodic", "Ann: we rented a kayak.", near(q, 0.62, g)), *filler])
    graph.write_memories("d", 1, [mem("episodic", "Ann: we rented a kayak.", near(q, 0.60, g)), filler[0],
                                  mem("episodic", "Ben: it was on the lake.", near(q, 0.0, g)), filler[1]])
    text = "Which lake did they kayak on?"
    assert _clips(graph.search.search(SearchSpec(q, videos=["d"], k=1))) == [0]  # the reference: the best single line
    assert _clips(graph.search.search(SearchSpec(q, videos=["d"], k=1, text=text))) == [1]
    without = with_settings(graph, variant(graph.settings, search={"clip_text_weight": 0.0})).search
    assert _clips(without.search(SearchSpec(q, videos=["d"], k=1, text=text))) == [0]  # the clip document decided it
    # search_node: the better clip's lines take its share, so its kayak line outranks the other clip's.
    nodes = graph.search.search(SearchSpec(q, mode="node", videos=["d"], k=2, text=text))
    assert nodes[0].clip_index == 1 and "Ann: we rented a kayak." in [m.text for m in nodes[0].memories]


def test_each_search_is_one_round_trip(graph: MemoryGraph) -> None:
    """search_clip and search_node, hybrid or not, run one statement once the server's capabilities are known."""
    q = _hybrid_world(graph)
    calls: list[str] = []
    ex = graph.search.ex
    read = ex.read

    def counting(name: str, /, **params: object) -> list[dict[str, object]]:
        calls.append(name)
        return read(name, **params)

    graph.search.search(SearchSpec(q, videos=["h"], text="harbour"))  # warms the capability and exact-path caches
    ex.read = counting  # type: ignore[method-assign]
    try:
        for text in ("harbour", None):
            calls.clear()
            assert graph.search.search(SearchSpec(q, videos=["h"], text=text))
            assert len(calls) == 1 and calls[0].startswith("search/ranked"), calls
            calls.clear()
            assert graph.search.search(SearchSpec(q, mode="node", videos=["h"], k=3, text=text))
            assert len(calls) == 1 and calls[0].startswith("search/ranked"), calls
    finally:
        del ex.read  # type: ignore[method-assign]
    expected = "search/ranked_2026" if ex.capabilities.search_clause else "search/ranked"
    assert calls == [expected]
    # Over more videos than `in_index_max_videos` (one SEARCH each) the post-filtered statement runs instead.
    few = with_settings(graph, variant(graph.settings, search={"in_index_max_videos": 0}))
    ex.read = counting  # type: ignore[method-assign]  (the same executor serves both stores)
    try:
        calls.clear()
        over_limit = few.search.search(SearchSpec(q, videos=["h"], text="harbour"))
        assert calls == ["search/count_candidates", "search/ranked"] or calls == ["search/ranked"], calls
    finally:
        del ex.read  # type: ignore[method-assign]
    assert over_limit == graph.search.search(SearchSpec(q, videos=["h"], text="harbour"))


def test_the_fusion_pool_is_a_share_of_the_memories_in_scope(graph: MemoryGraph) -> None:
    q = _hybrid_world(graph)  # video h: 2 + 3 + 2 memories in clips 0, 1, 2
    whole = with_settings(graph, variant(graph.settings, search={"fusion_pool": 1, "fusion_share": 1.0,
                                                                 "fusion_pool_max": 10000}))
    assert whole.search.plan(SearchSpec(q, videos=["h"], k=1, text="harbour")).n == 7
    assert whole.search.plan(SearchSpec(q, videos=["h"], before_clip=1, k=1, text="harbour")).n == 5
    every = graph.ex.read("search/count_memories")[0]["n"]
    assert every >= 7 and whole.search.plan(SearchSpec(q, k=1, text="harbour")).n == every  # no source: all
    capped = with_settings(graph, variant(whole.settings, search={"fusion_pool_max": 6}))
    assert capped.search.plan(SearchSpec(q, videos=["h"], k=1, text="harbour")).n == 6
    # The default share keeps the default pool at this size, and the results are the same either way.
    assert graph.search.plan(SearchSpec(q, videos=["h"], text="harbour")).n == graph.settings.search.fusion_pool
    spec = SearchSpec(q, mode="node", videos=["h"], k=3, text="harbour")
    assert whole.search.search(spec) == graph.search.search(spec)


def test_hybrid_text_is_never_lucene_syntax(graph: MemoryGraph) -> None:
    q = _hybrid_world(graph)
    for text in [*HOSTILE, "text:zanzibar", "kind:episodic", "zanz*", "harbour^10", "ann~2 /regex/"]:
        results = graph.search.search(SearchSpec(q, videos=["h"], k=2, text=text))
        assert len(results) <= 2, text
        graph.search.search(SearchSpec(q, mode="node", videos=["h"], k=3, text=text))
    assert lucene_query_terms('Lily" OR *:* AND (Bob~ text:x') == 'text:("lily" "bob" "text")'
    assert lucene_query_terms("What is it?") is None
    assert lucene_query_terms("kind:semantic") == 'text:("kind" "semantic")'


def test_search_floor_is_measured_per_text_model(settings: Settings) -> None:
    assert settings.search.clip_threshold is None
    assert settings.text_model.model == BGE_TEXT_MODEL  # the default text embedder
    assert settings.search_floor == TEXT_MODEL_FLOORS["bge-small-en-v1.5-q"] == 0.5
    minilm = variant(settings, text_model={"model": PACKAGED_TEXT_MODEL})
    assert minilm.search_floor == TEXT_MODEL_FLOORS["all-minilm-l6-v2"] == 0.25
    assert variant(settings, search={"clip_threshold": 0.4}).search_floor == 0.4
    assert variant(settings, text_model={"model": "/models/Unknown-Model"}).search_floor == 0.0


def test_vector_weight_is_chosen_per_text_model(settings: Settings) -> None:
    assert settings.search.vector_weight is None
    assert settings.search_vector_weight == TEXT_MODEL_VECTOR_WEIGHTS["bge-small-en-v1.5-q"] == 0.6
    minilm = variant(settings, text_model={"model": PACKAGED_TEXT_MODEL})
    assert minilm.search_vector_weight == TEXT_MODEL_VECTOR_WEIGHTS["all-minilm-l6-v2"] == 0.4
    assert variant(minilm, search={"vector_weight": 0.7}).search_vector_weight == 0.7  # set explicitly: it wins
    assert variant(settings, text_model={"model": "/models/Unknown-Model"}).search_vector_weight == 0.4


def test_search_mixes_with_the_text_models_weight(graph: MemoryGraph) -> None:
    """The weight reaches the query: a close vector with one shared word against a far one that repeats it."""
    g = rng(23)
    add_clip(graph, "w", 0)
    q = unit(text_dim(graph), g)
    graph.write_memories("w", 0, [mem("episodic", "Ann waters the ferns on the balcony.", near(q, 0.95, g)),
                                  mem("episodic", "Kite, kite, kite: a kite above a kite.", near(q, 0.55, g))])

    def top(settings: Settings) -> str:
        (r,) = with_settings(graph, settings).search.search(SearchSpec(q, mode="node", videos=["w"], k=1,
                                                                       text="kite ferns"))
        return r.memories[0].text

    by_weight = {w: top(variant(graph.settings, search={"vector_weight": w})) for w in (0.0, 1.0)}
    assert by_weight[0.0].startswith("Kite") and by_weight[1.0].startswith("Ann")
    own = graph.settings.search_vector_weight
    assert top(graph.settings) == top(variant(graph.settings, search={"vector_weight": own}))
