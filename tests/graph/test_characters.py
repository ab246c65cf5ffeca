"""Characters from equivalence votes (reference §3.6): argmax vs components, cannot-link, stable ids."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import EquivalenceVote
from tests.helpers.graph import (
    add_clip,
    face_cluster,
    face_dim,
    mem,
    rng,
    rows,
    set_next_entity_id,
    text_dim,
    unit,
    variant,
    voice_cluster,
    voice_dim,
    with_settings,
)

COMPONENTS = {"character_mode": "components"}


@dataclass
class Cast:
    face_1: int
    face_12: int
    voice_13: int
    gen: np.random.Generator


def _cast(mg: MemoryGraph, co_occurring: bool = False, clips: int = 6) -> Cast:
    """The reference's test case: entities face_1, face_12 and voice_13, all seen in clip 0."""
    g = rng(7)
    for i in range(clips):
        add_clip(mg, "v", i)
    set_next_entity_id(mg, 1)
    times_12 = [0.0, 1.0, 2.0] if co_occurring else [50.0, 51.0, 52.0]
    (f1,) = mg.resolve_faces("v", 0, [face_cluster(0, unit(face_dim(mg), g), g, times=[0.0, 1.0, 2.0])])
    assert f1.entity_id == 1
    set_next_entity_id(mg, 12)
    # face_12 arrives with face_1 in one resolution call only when they co-occur (to record the cannot-link).
    add_clip(mg, "v", 99)
    if co_occurring:
        res = mg.resolve_faces("v", 99, [face_cluster(0, unit(face_dim(mg), g), g, times=times_12),
                                          face_cluster(1, _face_vector_of(mg, 1), g, cos=0.999,
                                                       times=[0.0, 1.0, 2.0])])
        assert {r.entity_id for r in res} == {1, 12}
    else:
        mg.resolve_faces("v", 99, [face_cluster(0, unit(face_dim(mg), g), g, times=times_12)])
    (v13,) = mg.resolve_voices("v", 0, [voice_cluster(0, unit(voice_dim(mg), g), g)])
    assert v13.entity_id == 13
    return Cast(1, 12, 13, g)


def _face_vector_of(mg: MemoryGraph, entity_id: int) -> np.ndarray:
    (row,) = rows(mg, "MATCH (f:Face {entity_id: $id}) RETURN f.centroid_unit AS u", id=entity_id)
    return np.asarray(row["u"])


def _equivalence(mg: MemoryGraph, clip: int, face: int, voice: int, gen: np.random.Generator) -> None:
    mg.write_memories("v", clip, [mem("semantic", f"Equivalence: <face_{face}>, <voice_{voice}>",
                                      unit(text_dim(mg), gen))])


def _vote_3_to_1(mg: MemoryGraph, c: Cast) -> None:
    for clip in (0, 1, 2):
        _equivalence(mg, clip, c.face_1, c.voice_13, c.gen)
    _equivalence(mg, 3, c.face_12, c.voice_13, c.gen)


def _chars(mg: MemoryGraph, c: Cast) -> dict[int, int]:
    return mg.characters_of([c.face_1, c.face_12, c.voice_13])


def test_argmax_keeps_people_apart_despite_one_wrong_vote(graph: MemoryGraph) -> None:
    c = _cast(graph)
    _vote_3_to_1(graph, c)
    votes = {(r["f"], r["v"]): r["n"] for r in rows(
        graph, "MATCH (f:Face)-[r:SAME_AS]->(v:Voice) RETURN f.entity_id AS f, v.entity_id AS v, r.votes AS n")}
    assert votes == {(1, 13): 3, (12, 13): 1}
    chars = _chars(graph, c)
    assert chars[1] == chars[13]
    assert chars[12] != chars[1]
    assert graph.counts()["Character"] == 2


def test_components_mode_reproduces_the_reference_merge(graph: MemoryGraph) -> None:
    mg = with_settings(graph, variant(graph.settings, memory=COMPONENTS))
    c = _cast(mg)
    _vote_3_to_1(mg, c)
    chars = _chars(mg, c)
    assert chars[1] == chars[12] == chars[13]
    assert graph.counts()["Character"] == 1


def test_components_mode_never_merges_faces_seen_together(graph: MemoryGraph) -> None:
    mg = with_settings(graph, variant(graph.settings, memory=COMPONENTS))
    c = _cast(mg, co_occurring=True)
    assert graph.counts()["CO_OCCURS"] == 1
    _vote_3_to_1(mg, c)
    chars = _chars(mg, c)
    assert chars[1] == chars[13]  # the stronger evidence wins the voice
    assert chars[12] != chars[1]


def test_min_votes_in_argmax_mode(graph: MemoryGraph) -> None:
    mg = with_settings(graph, variant(graph.settings, memory={"min_votes": 2}))
    c = _cast(mg)
    _equivalence(mg, 0, c.face_1, c.voice_13, c.gen)
    assert _chars(mg, c)[1] != _chars(mg, c)[13]
    _equivalence(mg, 1, c.face_1, c.voice_13, c.gen)
    assert _chars(mg, c)[1] == _chars(mg, c)[13]


def test_ids_are_stable_when_grouping_does_not_change(graph: MemoryGraph) -> None:
    c = _cast(graph)
    _vote_3_to_1(graph, c)
    before = _chars(graph, c)
    _equivalence(graph, 4, c.face_1, c.voice_13, c.gen)  # a fourth vote for the same pair
    _equivalence(graph, 5, c.face_12, c.voice_13, c.gen)  # 2 votes against 4: still the loser
    assert _chars(graph, c) == before
    # A replayed clip, and a refresh with nothing new, keep the ids as well.
    _equivalence(graph, 5, c.face_12, c.voice_13, c.gen)
    graph.refresh_characters([c.face_1, c.face_12, c.voice_13])
    assert _chars(graph, c) == before
    ids = sorted(r["id"] for r in rows(graph, "MATCH (ch:Character) RETURN ch.char_id AS id"))
    assert ids == sorted(set(before.values()))


def test_merge_keeps_the_oldest_id_and_records_the_alias(graph: MemoryGraph) -> None:
    c = _cast(graph)
    first = _chars(graph, c)
    oldest, younger = first[c.face_1], first[c.voice_13]
    assert oldest < younger and first[c.face_12] not in (oldest, younger)
    _equivalence(graph, 1, c.face_1, c.voice_13, c.gen)
    merged = _chars(graph, c)
    assert merged[c.face_1] == merged[c.voice_13] == oldest
    assert merged[c.face_12] == first[c.face_12]
    (row,) = rows(graph, "MATCH (ch:Character {char_id: $id}) RETURN ch.aliases AS aliases, ch.size AS size",
                  id=oldest)
    assert row == {"aliases": [younger], "size": 2}
    assert rows(graph, "MATCH (ch:Character {char_id: $id}) RETURN ch", id=younger) == []
    # The retired id still resolves, to the whole merged character.
    assert graph.search.entities_of([younger]) == sorted([c.face_1, c.voice_13])
    assert graph.search.entities_of([oldest]) == sorted([c.face_1, c.voice_13])


def test_split_keeps_the_id_on_the_larger_part(graph: MemoryGraph) -> None:
    """voice_a (oldest entity) ≡ face via clip 4 only, voice_b ≡ face via clips 0 and 1: deleting clip 4 splits."""
    g = rng(9)
    for i in range(5):
        add_clip(graph, "v", i)
    (va,) = graph.resolve_voices("v", 0, [voice_cluster(0, unit(voice_dim(graph), g), g, start=0.0)])
    (face,) = graph.resolve_faces("v", 0, [face_cluster(0, unit(face_dim(graph), g), g)])
    (vb,) = graph.resolve_voices("v", 1, [voice_cluster(0, unit(voice_dim(graph), g), g)])
    a, f, b = va.entity_id, face.entity_id, vb.entity_id
    assert a < f < b
    _equivalence(graph, 4, f, a, g)
    for clip in (0, 1):
        _equivalence(graph, clip, f, b, g)
    whole = graph.characters_of([a, f, b])
    assert len(set(whole.values())) == 1
    char = whole[a]
    known = {r["id"] for r in rows(graph, "MATCH (ch:Character) RETURN ch.char_id AS id UNION "
                                          "MATCH (ch:Character) UNWIND ch.aliases AS id RETURN id")}
    graph.delete_clip("v", 4)
    after = graph.characters_of([a, f, b])
    assert after[f] == after[b] == char
    assert after[a] != char and after[a] not in known  # the smaller part gets a fresh id
    assert graph.counts()["Character"] == 2


def test_manual_votes_join_characters_and_can_be_withdrawn(graph: MemoryGraph) -> None:
    c = _cast(graph)
    graph.record_votes("v", 1, [EquivalenceVote(face_id=c.face_12, voice_id=c.voice_13, source="manual")],
                       source="manual")
    chars = _chars(graph, c)
    assert chars[12] == chars[13] != chars[1]
    graph.record_votes("v", 1, [], source="manual")
    chars = _chars(graph, c)
    assert chars[12] != chars[13] and graph.counts()["SAME_AS"] == 0
