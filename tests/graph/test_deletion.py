"""Deleting clips, videos and characters on the real server: full cascade, no orphans, consistent repairs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from tests.helpers.graph import (
    add_clip,
    assert_no_orphans,
    by_text,
    entity,
    face_cluster,
    face_dim,
    mem,
    near,
    orphan_report,
    rng,
    rows,
    text_dim,
    unit,
    voice_cluster,
    voice_dim,
)


@dataclass
class Story:
    a: int  # face in v1#0, v1#1 and v2#0
    b: int  # face only in v1#1
    c: int  # face in v1#1 and v1#2 (seen in the same frame as a in v1#1)
    v: int  # voice in v1#0 and v1#1, voted equal to a in both


def _story(mg: MemoryGraph) -> Story:
    g = rng(21)
    pa, pb, pc = (unit(face_dim(mg), g) for _ in range(3))
    speaker = unit(voice_dim(mg), g)
    for i in range(3):
        add_clip(mg, "v1", i)
    add_clip(mg, "v2", 0)
    (ra,) = mg.resolve_faces("v1", 0, [face_cluster(0, pa, g, n=5, qualities=[30, 31, 32, 20, 21])])
    (rv,) = mg.resolve_voices("v1", 0, [voice_cluster(0, speaker, g)])
    r1 = mg.resolve_faces("v1", 1, [face_cluster(0, pa, g, times=[5.0, 6.0, 7.0]),
                                    face_cluster(1, pb, g, times=[10.0, 11.0]),
                                    face_cluster(2, pc, g, times=[7.0, 8.0])])
    mg.resolve_voices("v1", 1, [voice_cluster(0, speaker, g)])
    mg.resolve_faces("v1", 2, [face_cluster(0, pc, g)])
    mg.resolve_faces("v2", 0, [face_cluster(0, pa, g)])
    s = Story(ra.entity_id, r1[1].entity_id, r1[2].entity_id, rv.entity_id)
    assert r1[0].entity_id == s.a and len({s.a, s.b, s.c, s.v}) == 4

    tea = unit(text_dim(mg), g)
    eq, eq_vec = f"Equivalence: <face_{s.a}>, <voice_{s.v}>", unit(text_dim(mg), g)
    mg.write_memories("v1", 0, [mem("episodic", f"<face_{s.a}> enters.", unit(text_dim(mg), g)),
                                mem("semantic", f"<face_{s.a}> likes tea.", tea),
                                mem("semantic", eq, eq_vec)])
    mg.write_memories("v1", 1, [mem("episodic", f"<face_{s.a}> meets <face_{s.b}> and <face_{s.c}>.",
                                    unit(text_dim(mg), g)),
                                mem("semantic", f"<face_{s.a}> enjoys tea.", near(tea, 0.95, g)),
                                mem("semantic", f"<face_{s.b}> wears a hat.", unit(text_dim(mg), g)),
                                mem("semantic", eq, eq_vec)])
    mg.write_memories("v1", 2, [mem("episodic", f"<face_{s.b}> waves at <face_{s.c}>.", unit(text_dim(mg), g))])
    mg.write_memories("v2", 0, [mem("episodic", f"<face_{s.a}> drives.", unit(text_dim(mg), g)),
                                mem("semantic", "The road is long.", unit(text_dim(mg), g))])
    assert_no_orphans(mg)
    return s


def _video_counts(mg: MemoryGraph, source_id: str) -> dict[str, int]:
    """The labels that `counts(video_id)` scopes to the video (entities and edges are global)."""
    counts = mg.counts(source_id)
    return {k: counts[k] for k in ("Clip", "Memory", "FaceObs", "Utterance")}


def _obs_keys(mg: MemoryGraph, entity_id: int) -> set[str]:
    return {r["k"] for r in rows(mg, "MATCH (o)-[:OF]->(e {entity_id: $id}) RETURN coalesce(o.obs_key, o.utt_key) "
                                     "AS k", id=entity_id)}


def test_orphan_checks_can_fail(graph: MemoryGraph) -> None:
    """The invariant queries are not vacuous: a deliberately broken graph is reported."""
    _story(graph)
    with graph.ex.session() as session:
        session.run("MATCH (o:FaceObs) WITH o LIMIT 1 MATCH (o)-[r:OF]->() DELETE r").consume()
        session.run("MATCH (m:Memory) WITH m LIMIT 1 MATCH (m)-[r:IN_CLIP]->() DELETE r").consume()
        session.run("CREATE (:Character {char_id: -1, size: 0})").consume()
    report = orphan_report(graph)
    assert report["FaceObs without OF"] == 1
    assert report["Memory without exactly one IN_CLIP"] == 1
    assert report["Character without IS"] == 1


def test_delete_clip_cascades(graph: MemoryGraph) -> None:
    s = _story(graph)
    v2_before = _video_counts(graph, "v2")
    graph.delete_clip("v1", 1)

    assert rows(graph, "MATCH (o) WHERE (o:FaceObs OR o:Utterance) AND o.video_id = 'v1' AND o.clip_index = 1 "
                       "RETURN o") == []
    assert graph.clip("v1", 1) is None
    texts = by_text(graph)
    assert f"<face_{s.a}> meets <face_{s.b}> and <face_{s.c}>." not in texts  # episodic of the clip
    assert f"<face_{s.b}> wears a hat." not in texts  # semantic supported only by the clip
    tea = texts[f"<face_{s.a}> likes tea."]
    assert tea["support"] == 1 and tea["support_clips"] == ["v1#0"]
    (edge,) = rows(graph, "MATCH (:Face)-[r:SAME_AS]->(:Voice) RETURN r.votes AS votes, r.evidence AS evidence")
    assert edge == {"votes": 1, "evidence": ["v1#0|memory"]}
    # b had no other evidence: gone; c keeps its clip-2 evidence; the a–c cannot-link came from the clip.
    faces = {r["id"] for r in rows(graph, "MATCH (f:Face) RETURN f.entity_id AS id")}
    assert faces == {s.a, s.c}
    assert graph.counts()["CO_OCCURS"] == 0
    # A memory of clip 2 still names b in its text, but no longer points at a deleted entity.
    waves = texts[f"<face_{s.b}> waves at <face_{s.c}>."]
    assert waves["mentions"] == [s.c]
    # a's exemplars are rebuilt from the exemplar candidates that are left (each clip offered its top 3): exactly
    # the set a run without clip 1 would have kept.
    e = entity(graph, s.a)
    assert not any(k.startswith("v1#1#") for k in e["obs"])
    candidates = {r["k"] for r in rows(graph, "MATCH (o)-[:OF]->(e {entity_id: $id}) WHERE o.candidate "
                                              "RETURN o.obs_key AS k", id=s.a)}
    assert set(e["obs"]) == candidates and e["n"] == len(candidates) == 6
    assert candidates < _obs_keys(graph, s.a)
    assert e["quality"] == sorted(e["quality"], reverse=True)
    assert np.allclose(e["centroid"], e["vectors"].mean(axis=0))
    assert np.allclose(e["unit"], e["vectors"].mean(axis=0) / np.linalg.norm(e["vectors"].mean(axis=0)))
    assert not any(k.startswith("v1#1#") for k in entity(graph, s.v)["obs"])
    # The NEXT chain skips the gap, the video's clip count follows, the other video is untouched.
    assert rows(graph, "MATCH (:Clip {clip_key: 'v1#0'})-[:NEXT]->(n:Clip) RETURN n.clip_key AS k") == [{"k": "v1#2"}]
    assert rows(graph, "MATCH (v:Video {video_id: 'v1'}) RETURN v.clip_count AS n") == [{"n": 2}]
    assert _video_counts(graph, "v2") == v2_before
    chars = graph.characters_of([s.a, s.v, s.c])
    assert chars[s.a] == chars[s.v] != chars[s.c]
    assert_no_orphans(graph)


def test_deleted_clip_can_be_ingested_again(graph: MemoryGraph) -> None:
    s = _story(graph)
    graph.delete_clip("v1", 2)
    add_clip(graph, "v1", 2)
    g = rng(5)
    (res,) = graph.resolve_faces("v1", 2, [face_cluster(0, entity(graph, s.c)["unit"], g, cos=0.99)])
    assert res.entity_id == s.c and not res.created
    assert rows(graph, "MATCH (:Clip {clip_key: 'v1#1'})-[:NEXT]->(n:Clip) RETURN n.clip_key AS k") == [{"k": "v1#2"}]
    assert_no_orphans(graph)


def test_delete_video_removes_everything_of_it(graph: MemoryGraph) -> None:
    s = _story(graph)
    v2_before = _video_counts(graph, "v2")
    a_v2 = {k for k in _obs_keys(graph, s.a) if k.startswith("v2#")}
    assert graph.delete_video("v1") == 3
    assert _video_counts(graph, "v1") == {"Clip": 0, "Memory": 0, "FaceObs": 0, "Utterance": 0}
    assert rows(graph, "MATCH (v:Video {video_id: 'v1'}) RETURN v") == []
    assert rows(graph, "MATCH (n) WHERE n.video_id = 'v1' RETURN labels(n) AS l") == []
    assert _video_counts(graph, "v2") == v2_before
    # Only a was seen in v2; its exemplars now come from v2 alone.
    assert {r["id"] for r in rows(graph, "MATCH (e) WHERE e:Face OR e:Voice RETURN e.entity_id AS id")} == {s.a}
    assert set(entity(graph, s.a)["obs"]) == a_v2
    assert graph.counts()["SAME_AS"] == 0 and graph.counts()["Character"] == 1
    assert_no_orphans(graph)
    with pytest.raises(NotFoundError):
        graph.delete_video("v1")


def test_delete_character_removes_the_person(graph: MemoryGraph) -> None:
    s = _story(graph)
    chars = graph.characters_of([s.a, s.v, s.b, s.c])
    assert chars[s.a] == chars[s.v]
    # The voice's original character was merged into a's: its retired id still names the person.
    (row,) = rows(graph, "MATCH (c:Character {char_id: $id}) RETURN c.aliases AS aliases", id=chars[s.a])
    alias = row["aliases"][0]
    result = graph.delete_character(alias)
    assert result["entities"] == 2
    assert {r["id"] for r in rows(graph, "MATCH (e) WHERE e:Face OR e:Voice RETURN e.entity_id AS id")} == {s.b, s.c}
    assert rows(graph, "MATCH (o) WHERE (o:FaceObs OR o:Utterance) AND NOT (o)-[:OF]->() RETURN o") == []
    assert graph.counts()["Utterance"] == 0
    assert graph.counts()["FaceObs"] == 2 + 2 + 3  # b in clip 1, c in clips 1 and 2
    left = by_text(graph)
    assert not any(f"<face_{s.a}>" in t or f"<voice_{s.v}>" in t for t in left)
    assert result["memories"] == 5
    assert set(left) == {f"<face_{s.b}> wears a hat.", f"<face_{s.b}> waves at <face_{s.c}>.", "The road is long."}
    assert graph.counts()["SAME_AS"] == 0 and graph.counts()["CO_OCCURS"] == 0
    assert graph.search.entities_of([chars[s.a], alias]) == []
    assert_no_orphans(graph)
    with pytest.raises(NotFoundError):
        graph.delete_character(chars[s.a])


def test_deleting_what_does_not_exist_is_not_found(graph: MemoryGraph) -> None:
    _story(graph)
    counts = graph.counts()
    with pytest.raises(NotFoundError, match="v1#7"):
        graph.delete_clip("v1", 7)
    with pytest.raises(NotFoundError):
        graph.delete_clip("nope", 0)
    with pytest.raises(NotFoundError):
        graph.delete_video("nope")
    with pytest.raises(NotFoundError):
        graph.delete_character(424242)
    assert graph.counts() == counts


def test_deleting_every_clip_leaves_an_empty_graph(graph: MemoryGraph) -> None:
    _story(graph)
    for video, clip in (("v1", 1), ("v2", 0), ("v1", 0), ("v1", 2)):
        graph.delete_clip(video, clip)
        assert_no_orphans(graph)
    counts = graph.counts()
    assert {k: n for k, n in counts.items() if n} == {}


def _bookkeeping(mg: MemoryGraph) -> dict[str, list[str]]:
    found = rows(mg, "MATCH (n) WHERE n:Lock OR n:Counter OR n:IdentityVote "
                     "RETURN labels(n)[0] AS label, coalesce(n.name, toString(n.vote_id)) AS name")
    out: dict[str, list[str]] = {}
    for r in found:
        out.setdefault(r["label"], []).append(r["name"])
    return {k: sorted(v) for k, v in out.items()}


def _all_nodes(mg: MemoryGraph) -> int:
    return rows(mg, "MATCH (n) WHERE NOT n:Migration AND NOT n:M3GraphTestSuite RETURN count(n) AS n")[0]["n"]


def test_deletion_leaves_no_votes_locks_or_counters_behind(graph: MemoryGraph) -> None:
    s = _story(graph)
    kept = graph.vote_identity(s.a, s.v, "same", note="v1 only: the voice goes with v1")
    undone = graph.vote_identity(s.b, s.c, "different", note="both faces only in v1")
    assert graph.undo_vote(undone.vote_id)
    before = _bookkeeping(graph)
    assert len(before["IdentityVote"]) == 2 and "memory:v1" in before["Lock"] and "entity" in before["Counter"]

    graph.delete_video("v1")
    after = _bookkeeping(graph)
    # Both votes name an entity that only v1 had (v, b, c): they go, the undone one too.
    assert "IdentityVote" not in after, after
    assert "memory:v1" not in after["Lock"] and "memory:v2" in after["Lock"]
    # v2's face a remains, so every id counter stays: ids must not be reused while data remains.
    assert after["Counter"] == before["Counter"]
    assert kept.vote_id not in [int(x) for x in after.get("IdentityVote", [])]

    graph.delete_video("v2")
    assert _bookkeeping(graph) == {} and _all_nodes(graph) == 0


def test_deleting_a_character_takes_the_votes_about_it(graph: MemoryGraph) -> None:
    s = _story(graph)
    graph.vote_identity(s.a, s.b, "different", note="a is not b")
    other = graph.vote_identity(s.b, s.c, "different")
    char = graph.characters_of([s.a])[s.a]
    graph.delete_character(char)
    votes = rows(graph, "MATCH (v:IdentityVote) RETURN v.vote_id AS id")
    assert votes == [{"id": other.vote_id}]  # the vote about a went with a; b-c stays (both remain)
    assert "Counter" in _bookkeeping(graph)


def _pairs(mg: MemoryGraph) -> dict[str, list[str]]:
    return {r["k"]: r["pairs"] for r in rows(mg, "MATCH (c:Clip) RETURN c.clip_key AS k, "
                                                 "coalesce(c.vote_pairs, []) + coalesce(c.cooccur_pairs, []) AS pairs")}


def test_deleting_a_character_leaves_no_pair_naming_it_on_a_clip(graph: MemoryGraph) -> None:
    """`Clip.vote_pairs` / `cooccur_pairs` list the SAME_AS and CO_OCCURS edges a clip contributed to; a deleted
    person's ids leave them, other pairs stay, and the clips can still be deleted cleanly afterwards."""
    s = _story(graph)
    before = _pairs(graph)
    assert f"{s.a}:{s.v}" in before["v1#0"] and f"{min(s.a, s.c)}:{max(s.a, s.c)}" in before["v1#1"]
    graph.vote_identity(s.b, s.c, "different")
    graph.delete_character(graph.characters_of([s.a])[s.a])
    gone = {str(s.a), str(s.v)}
    after = _pairs(graph)
    assert not [p for pairs in after.values() for p in pairs if gone & set(p.split(":"))], after
    for video, clip in (("v1", 1), ("v1", 0), ("v2", 0), ("v1", 2)):
        graph.delete_clip(video, clip)
        assert_no_orphans(graph)
