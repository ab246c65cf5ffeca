"""Writing clip memories on the real server: idempotency, semantic dedup, replacement, validation, votes."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pytest

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import EquivalenceVote, MemoryIn
from m3graph.settings import Settings
from tests.helpers.graph import (
    add_clip,
    by_text,
    face_cluster,
    face_dim,
    mem,
    memories,
    near,
    rng,
    rows,
    text_dim,
    unit,
    variant,
    voice_cluster,
    voice_dim,
    wipe,
    with_settings,
)


@dataclass
class Scene:
    face_a: int
    face_b: int
    voice: int
    gen: np.random.Generator


def _scene(mg: MemoryGraph, clips: int = 3, video: str = "v") -> Scene:
    """A video with `clips` clips; clip 0 shows two faces and one voice."""
    g = rng(42)
    for i in range(clips):
        add_clip(mg, video, i)
    a, b = mg.resolve_faces(video, 0, [face_cluster(0, unit(face_dim(mg), g), g),
                                       face_cluster(1, unit(face_dim(mg), g), g)])
    (v,) = mg.resolve_voices(video, 0, [voice_cluster(0, unit(voice_dim(mg), g), g)])
    return Scene(a.entity_id, b.entity_id, v.entity_id, g)


def _support(mg: MemoryGraph) -> dict[str, tuple[int, list[str]]]:
    return {k: (m["support"], sorted(m["support_clips"])) for k, m in memories(mg).items()}


def test_ingesting_a_clip_twice_changes_nothing(graph: MemoryGraph) -> None:
    s = _scene(graph)
    g = s.gen
    batch = [
        mem("episodic", f"<face_{s.face_a}> waves at <face_{s.face_b}>.", unit(text_dim(graph), g)),
        mem("episodic", f"<voice_{s.voice}> says hello.", unit(text_dim(graph), g)),
        mem("semantic", f"<face_{s.face_a}> is friendly.", unit(text_dim(graph), g)),
        mem("semantic", "The kitchen is bright.", unit(text_dim(graph), g)),
        mem("semantic", f"Equivalence: <face_{s.face_a}>, <voice_{s.voice}>", unit(text_dim(graph), g)),
    ]
    first = graph.write_memories("v", 0, batch)
    assert first.episodic == 2 and first.semantic_created == 3 and first.equivalence_votes == 1
    counts, support = graph.counts(), _support(graph)
    props = rows(graph, "MATCH (m:Memory) RETURN m.memory_id AS id, m.text AS t, m.order_in_clip AS o, "
                        "m.embedding AS x ORDER BY id")
    graph.write_memories("v", 0, batch)
    assert graph.counts() == counts
    assert _support(graph) == support
    assert all(s == 1 for s, _ in support.values())
    assert rows(graph, "MATCH (m:Memory) RETURN m.memory_id AS id, m.text AS t, m.order_in_clip AS o, "
                       "m.embedding AS x ORDER BY id") == props
    assert counts["Memory"] == 5 and counts["votes"] == 1 and counts["MENTIONS"] == 6


@pytest.mark.parametrize("path", ["exact", "index"])
def test_near_duplicate_statement_reinforces_and_a_different_one_is_new(memory_graph: MemoryGraph, path: str) -> None:
    wipe(memory_graph)
    limit = 20000 if path == "exact" else 0  # 0 forces dedup through the vector index
    graph = with_settings(memory_graph, variant(memory_graph.settings, search={"exact_scan_limit": limit}))
    s = _scene(graph)
    g = s.gen
    fact = unit(text_dim(graph), g)
    graph.write_memories("v", 0, [mem("semantic", f"<face_{s.face_a}> likes tea.", fact)])
    before = graph.counts()["Memory"]
    summary = graph.write_memories("v", 1, [mem("semantic", f"<face_{s.face_a}> enjoys tea.", near(fact, 0.9, g))])
    assert summary.semantic_reinforced == 1 and summary.semantic_created == 0
    assert graph.counts()["Memory"] == before
    (m,) = memories(graph).values()
    assert m["support"] == 2 and sorted(m["support_clips"]) == ["v#0", "v#1"]
    assert m["text"] == f"<face_{s.face_a}> likes tea." and m["in_clip"] == ["v#0"]
    weights = rows(graph, "MATCH (:Memory)-[r:MENTIONS]->() RETURN r.weight AS w")
    assert [w["w"] for w in weights] == [2.0]
    # Below the 0.85 threshold: a new statement.
    summary = graph.write_memories("v", 2, [mem("semantic", f"<face_{s.face_a}> hates coffee.", near(fact, 0.8, g))])
    assert summary.semantic_created == 1 and graph.counts()["Memory"] == before + 1


def test_dedup_requires_the_mentions_to_be_covered(graph: MemoryGraph) -> None:
    s = _scene(graph)
    g = s.gen
    fact = unit(text_dim(graph), g)
    graph.write_memories("v", 0, [mem("semantic", f"<face_{s.face_a}> likes tea.", fact)])
    # Same vector, other person: must not reinforce a's fact.
    summary = graph.write_memories("v", 1, [mem("semantic", f"<face_{s.face_b}> likes tea.", fact)])
    assert summary.semantic_created == 1
    # A statement about a and b is not covered by a fact about a only.
    summary = graph.write_memories("v", 2, [mem("semantic", f"<face_{s.face_a}> and <face_{s.face_b}> like tea.",
                                                 near(fact, 0.99, g))])
    assert summary.semantic_created == 1
    assert graph.counts()["Memory"] == 3
    assert all(m["support"] == 1 for m in memories(graph).values())


def test_dedup_within_one_clip(graph: MemoryGraph) -> None:
    s = _scene(graph)
    g = s.gen
    fact = unit(text_dim(graph), g)
    summary = graph.write_memories("v", 0, [mem("semantic", f"<face_{s.face_a}> likes tea.", fact),
                                            mem("semantic", f"<face_{s.face_a}> loves tea.", near(fact, 0.95, g))])
    assert summary.semantic_created == 1 and summary.semantic_reinforced == 1
    assert graph.counts()["Memory"] == 1
    (m,) = memories(graph).values()
    assert m["support"] == 1


def test_episodic_memories_are_never_deduplicated(graph: MemoryGraph) -> None:
    s = _scene(graph)
    v = unit(text_dim(graph), s.gen)
    graph.write_memories("v", 0, [mem("episodic", "A door opens.", v)])
    graph.write_memories("v", 1, [mem("episodic", "A door opens.", v)])
    assert graph.counts()["Memory"] == 2


def test_dedup_is_scoped_to_the_video(graph: MemoryGraph) -> None:
    s = _scene(graph)
    add_clip(graph, "w", 0)
    fact = unit(text_dim(graph), s.gen)
    graph.write_memories("v", 0, [mem("semantic", "The sky is blue.", fact)])
    summary = graph.write_memories("w", 0, [mem("semantic", "The sky is blue.", fact)])
    assert summary.semantic_created == 1
    assert graph.counts("v")["Memory"] == 1 and graph.counts("w")["Memory"] == 1


def test_re_memorizing_a_clip_replaces_its_contribution(graph: MemoryGraph) -> None:
    s = _scene(graph, clips=3)
    g = s.gen
    tea, walk = unit(text_dim(graph), g), unit(text_dim(graph), g)
    graph.write_memories("v", 0, [mem("semantic", f"<face_{s.face_a}> likes tea.", tea)])
    old = [mem("episodic", "First old event.", unit(text_dim(graph), g)),
           mem("episodic", "Second old event.", unit(text_dim(graph), g)),
           mem("semantic", f"<face_{s.face_a}> enjoys tea.", near(tea, 0.95, g)),
           mem("semantic", f"<face_{s.face_b}> walks daily.", walk),
           mem("semantic", f"Equivalence: <face_{s.face_a}>, <voice_{s.voice}>", unit(text_dim(graph), g))]
    graph.write_memories("v", 1, old)
    # Clip 2 reinforces the walking fact that clip 1 created.
    graph.write_memories("v", 2, [mem("semantic", f"<face_{s.face_b}> walks every day.", near(walk, 0.95, g))])
    assert graph.counts()["votes"] == 1
    texts = by_text(graph)
    assert texts[f"<face_{s.face_a}> likes tea."]["support"] == 2
    assert texts[f"<face_{s.face_b}> walks daily."]["support"] == 2

    new = [mem("episodic", "A new event.", unit(text_dim(graph), g))]
    graph.write_memories("v", 1, new)
    texts = by_text(graph)
    assert "First old event." not in texts and "Second old event." not in texts
    assert texts["A new event."]["support_clips"] == ["v#1"]
    tea_fact = texts[f"<face_{s.face_a}> likes tea."]
    assert tea_fact["support"] == 1 and tea_fact["support_clips"] == ["v#0"]
    # The walking fact was first stated in clip 1: it now belongs to clip 2, its remaining support.
    walk_fact = texts[f"<face_{s.face_b}> walks daily."]
    assert walk_fact["support_clips"] == ["v#2"] and walk_fact["in_clip"] == ["v#2"] and walk_fact["clip_index"] == 2
    assert not any(t.startswith("Equivalence") for t in texts)
    assert graph.counts()["votes"] == 0 and graph.counts()["SAME_AS"] == 0
    assert graph.counts()["Memory"] == 3


def test_unknown_entity_is_refused_and_nothing_is_written(graph: MemoryGraph) -> None:
    s = _scene(graph)
    g = s.gen
    graph.write_memories("v", 0, [mem("episodic", f"<face_{s.face_a}> sits.", unit(text_dim(graph), g))])
    counts, support = graph.counts(), _support(graph)
    bad = [mem("episodic", f"<face_{s.face_a}> stands.", unit(text_dim(graph), g)),
           mem("semantic", "<face_999> is tall.", unit(text_dim(graph), g))]
    with pytest.raises(InvalidInputError, match="<face_999>"):
        graph.write_memories("v", 0, bad)
    with pytest.raises(InvalidInputError, match=f"<voice_{s.face_a}>"):  # a face id used as a voice
        graph.write_memories("v", 1, [mem("semantic", f"Equivalence: <face_{s.face_a}>, <voice_{s.face_a}>",
                                          unit(text_dim(graph), g))])
    with pytest.raises(InvalidInputError, match="<voice_777>"):
        graph.write_memories("v", 1, [], votes=[EquivalenceVote(face_id=s.face_a, voice_id=777)])
    assert graph.counts() == counts and _support(graph) == support


def test_other_invalid_writes_change_nothing(graph: MemoryGraph) -> None:
    s = _scene(graph)
    g = s.gen
    counts = graph.counts()
    with pytest.raises(NotFoundError):
        graph.write_memories("v", 9, [mem("episodic", "Nobody.", unit(text_dim(graph), g))])
    with pytest.raises(InvalidInputError, match=f"{text_dim(graph)}-d"):
        graph.write_memories("v", 0, [mem("episodic", "Short vector.", unit(text_dim(graph) - 1, g))])
    assert graph.counts() == counts


def test_equivalence_lines_become_votes(graph: MemoryGraph) -> None:
    s = _scene(graph, clips=3)
    g = s.gen
    eq_text = f"Equivalence: <face_{s.face_a}>, <voice_{s.voice}>"
    eq_vec = unit(text_dim(graph), g)
    summary = graph.write_memories("v", 0, [mem("semantic", eq_text, eq_vec)])
    assert summary.equivalence_votes == 1
    (edge,) = rows(graph, "MATCH (f:Face)-[r:SAME_AS]->(v:Voice) RETURN f.entity_id AS f, v.entity_id AS v, "
                          "r.votes AS votes, r.evidence AS evidence")
    assert edge == {"f": s.face_a, "v": s.voice, "votes": 1, "evidence": ["v#0|memory"]}
    chars = graph.characters_of([s.face_a, s.voice, s.face_b])
    assert chars[s.face_a] == chars[s.voice] != chars[s.face_b]
    # The same line in a later clip reinforces the statement and adds a vote from that clip.
    summary = graph.write_memories("v", 1, [mem("semantic", eq_text, near(eq_vec, 0.99, g))])
    assert summary.semantic_reinforced == 1
    (edge,) = rows(graph, "MATCH ()-[r:SAME_AS]->() RETURN r.votes AS votes, r.evidence AS evidence")
    assert edge["votes"] == 2 and sorted(edge["evidence"]) == ["v#0|memory", "v#1|memory"]
    # A replay of clip 1 does not count twice; equivalences are never shown as memories.
    graph.write_memories("v", 1, [mem("semantic", eq_text, near(eq_vec, 0.99, g))])
    assert graph.counts()["votes"] == 2
    (clip,) = graph.search.fetch_clip("v", 0)
    assert clip.memories == []
    # Explicit votes from another source are kept apart from memory votes.
    graph.record_votes("v", 2, [EquivalenceVote(face_id=s.face_b, voice_id=s.voice, source="meta-clip")])
    assert graph.counts()["votes"] == 3 and graph.counts()["SAME_AS"] == 2
    graph.write_memories("v", 2, [])
    assert graph.counts()["votes"] == 3


def test_counts_report_every_label_even_when_zero(graph: MemoryGraph) -> None:
    counts = graph.counts()
    assert set(counts) >= {"Clip", "Memory", "FaceObs", "Utterance", "Face", "Voice", "Character", "SAME_AS",
                           "votes", "MENTIONS", "CO_OCCURS", "IS"}
    assert all(n == 0 for n in counts.values())


def _write_concurrently(writes: list[tuple[MemoryGraph, int, list[MemoryIn]]]) -> None:
    barrier = threading.Barrier(len(writes))

    def work(job: tuple[MemoryGraph, int, list[MemoryIn]]) -> None:
        mg, clip, batch = job
        barrier.wait()
        mg.write_memories("v", clip, batch)

    with ThreadPoolExecutor(max_workers=len(writes)) as pool:
        list(pool.map(work, writes))


def test_concurrent_clips_stating_the_same_fact_make_one_memory(graph: MemoryGraph, settings: Settings) -> None:
    other = MemoryGraph.connect(settings, migrate=False)
    try:
        for attempt in range(4):
            wipe(graph)
            s = _scene(graph)
            fact = unit(text_dim(graph), rng(attempt))
            _write_concurrently([
                (graph, 1, [mem("semantic", f"<face_{s.face_a}> likes tea.", fact)]),
                (other, 2, [mem("semantic", f"<face_{s.face_a}> enjoys tea.", near(fact, 0.95, rng(attempt + 50)))]),
            ])
            (m,) = memories(graph).values()
            assert m["support"] == 2 and sorted(m["support_clips"]) == ["v#1", "v#2"], f"attempt {attempt}"
    finally:
        other.close()


def test_a_clip_write_runs_few_statements(graph: MemoryGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 12: a clip's memory write reads everything it needs in one statement (lock, clip, entities, prior
    contribution, semantic count), then dedups, upserts, derives the clip's search text and sets its votes: the
    votes statement only where the clip has votes to write or pairs it voted on before (issue 40)."""
    from m3graph.graphdb.executor import Tx

    s = _scene(graph)
    names: list[str] = []
    original = Tx.run

    def run(self: Tx, name: str, /, **params: object) -> list[dict[str, object]]:
        names.append(name)
        return original(self, name, **params)

    monkeypatch.setattr(Tx, "run", run)
    g = rng(4)
    graph.write_memories("v", 0, [mem("episodic", f"<face_{s.face_a}> waves.", unit(text_dim(graph), g)),
                                  mem("semantic", f"<face_{s.face_a}> likes tea.", unit(text_dim(graph), g))])
    # A statement with a slot ("likes tea") adds its named things and its slot's versions (facts that change).
    assert names == ["memory/prepare", "memory/dedup_exact", "memory/upsert", "facts/link_things",
                     "facts/slot_assertions", "facts/set_versions", "clip/refresh_search_text"], names
    vote = mem("semantic", f"Equivalence: <face_{s.face_a}>, <voice_{s.voice}>", unit(text_dim(graph), g))
    names.clear()
    graph.write_memories("v", 1, [vote])
    assert names.count("memory/votes") == 1, names  # then the characters the vote joins
    assert _voted(graph) == (1, [f"{s.face_a}:{s.voice}"])
    names.clear()
    graph.write_memories("v", 1, [mem("episodic", "Nothing about anyone.", unit(text_dim(graph), g))])
    assert names.count("memory/votes") == 1, names  # the clip's earlier vote is taken back
    assert _voted(graph) == (0, [])


def _voted(graph: MemoryGraph) -> tuple[int, list[str]]:
    """Clip v#1's memory votes: SAME_AS edges holding its evidence, and the pairs the clip lists."""
    with graph.ex.session() as session:
        row = session.run("MATCH (c:Clip {clip_key: 'v#1'}) RETURN c.vote_pairs AS pairs, COUNT { (:Face)-[r:SAME_AS]->"
                          "(:Voice) WHERE 'v#1|memory' IN r.evidence } AS edges").single()
    assert row is not None
    return row["edges"], row["pairs"]
