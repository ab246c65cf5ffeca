"""Face/voice identity resolution on the real server: matching, exemplars, constraints, idempotency, races."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import FaceCluster, FaceObservation, Resolution
from m3graph.settings import Settings
from tests.helpers.graph import (
    add_clip,
    entity,
    face_cluster,
    face_dim,
    near,
    rng,
    rows,
    unit,
    voice_cluster,
    voice_dim,
    wipe,
)


def _reference_score(query: FaceCluster, stored: np.ndarray, top: int) -> tuple[float, float]:
    """The reference score two ways: mean of all pairwise cosines, and q̄·n̄ (means of unit rows)."""
    best = sorted(range(len(query.observations)),
                  key=lambda i: (-query.observations[i].det_score, -query.observations[i].quality, i))[:top]
    q = np.asarray([query.observations[i].embedding for i in best], dtype=np.float64)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    pairwise = float((q @ stored.T).mean())
    means = float(q.mean(axis=0) @ stored.mean(axis=0))
    return pairwise, means


def test_new_cluster_creates_an_entity(graph: MemoryGraph) -> None:
    g = rng(1)
    add_clip(graph, "v", 0)
    (res,) = graph.resolve_faces("v", 0, [face_cluster(7, unit(face_dim(graph), g), g)])
    assert res.label == 7 and res.created and res.score is None
    counts = graph.counts()
    assert counts["Face"] == 1 and counts["FaceObs"] == 3 and counts["Character"] == 1 and counts["IS"] == 1
    e = entity(graph, res.entity_id)
    assert e["n"] == 3 and e["dim"] == face_dim(graph)
    assert np.allclose(np.linalg.norm(e["vectors"], axis=1), 1.0)
    assert np.allclose(e["centroid"], e["vectors"].mean(axis=0))
    assert np.isclose(np.linalg.norm(e["unit"]), 1.0)
    assert graph.characters_of([res.entity_id]) != {}


def test_similar_cluster_matches_with_the_exact_reference_score(graph: MemoryGraph) -> None:
    g = rng(2)
    person = unit(face_dim(graph), g)
    add_clip(graph, "v", 0)
    add_clip(graph, "v", 1)
    (first,) = graph.resolve_faces("v", 0, [face_cluster(0, person, g)])
    stored = entity(graph, first.entity_id)["vectors"]
    # Five observations with distinct det scores: the top 3 by (det, quality) are what the score uses.
    second_cluster = face_cluster(3, person, g, n=5, cos=0.9, qualities=[30, 21, 40, 22, 23])
    second_cluster = FaceCluster(label=3, observations=[
        o.model_copy(update={"det_score": d}) for o, d in zip(second_cluster.observations,
                                                               [0.95, 0.99, 0.90, 0.97, 0.99], strict=True)])
    (second,) = graph.resolve_faces("v", 1, [second_cluster])
    assert second.entity_id == first.entity_id and not second.created
    pairwise, means = _reference_score(second_cluster, stored, graph.settings.identity.exemplars_per_cluster)
    assert pairwise == pytest.approx(means, abs=1e-12)
    assert second.score is not None and second.score >= graph.settings.face_match_threshold
    assert second.score == pytest.approx(pairwise, abs=1e-9)
    assert graph.counts()["Face"] == 1 and graph.counts()["FaceObs"] == 8


def test_dissimilar_cluster_creates_a_new_entity(graph: MemoryGraph) -> None:
    g = rng(3)
    person = unit(face_dim(graph), g)
    add_clip(graph, "v", 0)
    add_clip(graph, "v", 1)
    (a,) = graph.resolve_faces("v", 0, [face_cluster(0, person, g)])
    # Just below the threshold: cos(person, other) = 0.25 and the observations are spread around `other`.
    other = near(person, 0.25, g)
    (b,) = graph.resolve_faces("v", 1, [face_cluster(0, other, g, cos=0.999)])
    assert b.created and b.entity_id != a.entity_id
    assert graph.counts()["Face"] == 2
    assert graph.characters_of([a.entity_id])[a.entity_id] != graph.characters_of([b.entity_id])[b.entity_id]


def test_threshold_is_inclusive_of_reference_value(graph: MemoryGraph) -> None:
    """A cluster just above 0.3 matches (the reference keeps score >= 0.3)."""
    g = rng(4)
    person = unit(face_dim(graph), g)
    add_clip(graph, "v", 0)
    add_clip(graph, "v", 1)
    (a,) = graph.resolve_faces("v", 0, [face_cluster(0, person, g, cos=1.0)])
    (b,) = graph.resolve_faces("v", 1, [face_cluster(0, near(person, 0.35, g), g, cos=1.0)])
    assert b.entity_id == a.entity_id and b.score == pytest.approx(0.35, abs=1e-9)


def test_co_occurring_clusters_never_share_an_entity(graph: MemoryGraph) -> None:
    g = rng(5)
    person = unit(face_dim(graph), g)
    add_clip(graph, "v", 0)
    add_clip(graph, "v", 1)
    # Two look-alike clusters in the same frames of one clip: two people.
    twins = [face_cluster(0, person, g, times=[1.0, 2.0, 3.0]), face_cluster(1, person, g, times=[3.0, 4.0, 5.0])]
    res = graph.resolve_faces("v", 0, twins)
    assert len({r.entity_id for r in res}) == 2 and all(r.created for r in res)
    assert graph.counts()["CO_OCCURS"] == 1
    # Later, two look-alikes co-occur again: one may take the existing entity, never both.
    again = [face_cluster(0, person, g, times=[9.0]), face_cluster(1, person, g, times=[9.0])]
    res2 = graph.resolve_faces("v", 1, again)
    assert res2[0].entity_id != res2[1].entity_id
    # Without co-occurrence, look-alike clusters of one clip are one person.
    add_clip(graph, "v", 2)
    stranger = unit(face_dim(graph), g)
    apart = [face_cluster(0, stranger, g, times=[1.0, 2.0]), face_cluster(1, stranger, g, times=[20.0])]
    res3 = graph.resolve_faces("v", 2, apart)
    assert res3[0].entity_id == res3[1].entity_id and res3[0].created
    assert graph.counts()["CO_OCCURS"] == 1


def test_resolving_again_returns_the_stored_mapping_and_writes_nothing(graph: MemoryGraph) -> None:
    g = rng(6)
    add_clip(graph, "v", 0)
    clusters = [face_cluster(0, unit(face_dim(graph), g), g), face_cluster(1, unit(face_dim(graph), g), g)]
    first = graph.resolve_faces("v", 0, clusters)
    voices = [voice_cluster(4, unit(voice_dim(graph), g), g)]
    first_v = graph.resolve_voices("v", 0, voices)
    counts = graph.counts()
    state = rows(graph, "MATCH (e) WHERE e:Face OR e:Voice RETURN e.entity_id AS id, e.exemplars AS x ORDER BY id")
    again = graph.resolve_faces("v", 0, clusters)
    again_v = graph.resolve_voices("v", 0, voices)
    assert [(r.label, r.entity_id) for r in again] == [(r.label, r.entity_id) for r in first]
    assert [(r.label, r.entity_id) for r in again_v] == [(r.label, r.entity_id) for r in first_v]
    assert not any(r.created for r in again + again_v)
    assert graph.counts() == counts
    assert rows(graph, "MATCH (e) WHERE e:Face OR e:Voice RETURN e.entity_id AS id, e.exemplars AS x "
                       "ORDER BY id") == state


def test_exemplars_are_capped_keeping_the_highest_quality(graph: MemoryGraph) -> None:
    g = rng(7)
    person = unit(face_dim(graph), g)
    cap = graph.settings.identity.max_face_exemplars
    qualities: list[float] = []
    eid = None
    for clip in range(5):
        add_clip(graph, "v", clip)
        q = [float(x) for x in g.uniform(20, 60, size=3)]
        qualities += q
        (res,) = graph.resolve_faces("v", clip, [face_cluster(0, person, g, qualities=q)])
        assert eid is None or res.entity_id == eid
        eid = res.entity_id
    assert eid is not None
    e = entity(graph, eid)
    assert len(qualities) > cap
    assert e["n"] == cap and len(e["exemplars"]) == cap * face_dim(graph)
    assert e["quality"] == sorted(qualities, reverse=True)[:cap]
    stored = {r["k"]: (r["q"], r["x"]) for r in rows(
        graph, "MATCH (o:FaceObs) RETURN o.obs_key AS k, o.quality AS q, o.embedding AS x")}
    for key, quality, vector in zip(e["obs"], e["quality"], e["vectors"], strict=True):
        assert stored[key][0] == quality
        assert np.allclose(stored[key][1], vector)
    assert np.allclose(e["centroid"], e["vectors"].mean(axis=0))


def test_voice_exemplars_are_capped(graph: MemoryGraph, settings: Settings) -> None:
    g = rng(8)
    speaker = unit(voice_dim(graph), g)
    cap = graph.settings.identity.max_voice_exemplars
    top = graph.settings.identity.exemplars_per_cluster
    ids = set()
    for clip in range(cap // top + 2):
        add_clip(graph, "v", clip)
        ids |= {r.entity_id for r in graph.resolve_voices("v", clip, [voice_cluster(0, speaker, g, n=top)])}
    assert len(ids) == 1
    assert entity(graph, ids.pop())["n"] == cap


def test_unregistered_clip_is_not_found_and_nothing_is_written(graph: MemoryGraph) -> None:
    g = rng(9)
    add_clip(graph, "v", 0)
    graph.resolve_faces("v", 0, [face_cluster(0, unit(face_dim(graph), g), g)])
    counts = graph.counts()
    with pytest.raises(NotFoundError, match="v#5"):
        graph.resolve_faces("v", 5, [face_cluster(0, unit(face_dim(graph), g), g)])
    with pytest.raises(NotFoundError):
        graph.resolve_voices("other", 0, [voice_cluster(0, unit(voice_dim(graph), g), g)])
    assert graph.counts() == counts


def test_wrong_dimension_is_refused_and_nothing_is_written(graph: MemoryGraph) -> None:
    g = rng(10)
    add_clip(graph, "v", 0)
    good = face_cluster(0, unit(face_dim(graph), g), g)
    bad = face_cluster(1, unit(face_dim(graph) // 2, g), g)
    with pytest.raises(InvalidInputError, match=rf"{face_dim(graph)}-d"):
        graph.resolve_faces("v", 0, [good, bad])
    mixed = FaceCluster(label=2, observations=[
        good.observations[0],
        FaceObservation(frame_time_s=50, bbox=(0, 0, 1, 1), det_score=0.9, quality=30,
                        embedding=unit(face_dim(graph) + 3, g).tolist())])
    with pytest.raises(InvalidInputError, match=rf"{face_dim(graph)}-d"):
        graph.resolve_faces("v", 0, [mixed])
    with pytest.raises(InvalidInputError, match=rf"{voice_dim(graph)}-d"):
        graph.resolve_voices("v", 0, [voice_cluster(0, unit(face_dim(graph), g), g)])
    assert graph.counts()["Face"] == 0 and graph.counts()["FaceObs"] == 0 and graph.counts()["Voice"] == 0
    # The clip was not marked resolved by the failed attempt: a correct retry succeeds.
    (res,) = graph.resolve_faces("v", 0, [good])
    assert res.created


def test_repeated_labels_are_refused(graph: MemoryGraph) -> None:
    g = rng(11)
    add_clip(graph, "v", 0)
    base = unit(face_dim(graph), g)
    with pytest.raises(InvalidInputError, match="label"):
        graph.resolve_faces("v", 0, [face_cluster(0, base, g), face_cluster(0, base, g)])
    assert graph.counts()["Face"] == 0


def test_voices_match_across_clips_and_create_for_strangers(graph: MemoryGraph) -> None:
    g = rng(12)
    speaker = unit(voice_dim(graph), g)
    add_clip(graph, "v", 0)
    add_clip(graph, "v", 1)
    (a,) = graph.resolve_voices("v", 0, [voice_cluster(0, speaker, g)])
    b, c = graph.resolve_voices("v", 1, [voice_cluster(0, speaker, g, start=0.0),
                                         voice_cluster(1, near(speaker, 0.5, g), g, start=10.0)])
    assert b.entity_id == a.entity_id and b.score is not None and b.score >= 0.6
    assert c.created and c.entity_id != a.entity_id


def _race(mgs: tuple[MemoryGraph, MemoryGraph], targets: list[tuple[str, int]], person: np.ndarray,
          seed: int) -> list[Resolution]:
    barrier = threading.Barrier(2)

    def work(i: int) -> Resolution:
        g = rng(seed * 10 + i)
        cluster = face_cluster(0, person, g, cos=0.97)
        barrier.wait()
        (res,) = mgs[i].resolve_faces(targets[i][0], targets[i][1], [cluster])
        return res

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(work, range(2)))


def test_concurrent_workers_seeing_the_same_new_person_create_one_entity(graph: MemoryGraph,
                                                                         settings: Settings) -> None:
    other = MemoryGraph.connect(settings, migrate=False)  # a second worker with its own driver
    try:
        for attempt in range(6):
            wipe(graph)
            g = rng(100 + attempt)
            person = unit(face_dim(graph), g)
            # Even attempts: two clips of one video; odd attempts: two videos.
            targets = [("v", 0), ("v", 1)] if attempt % 2 == 0 else [("a", 0), ("b", 0)]
            for video, clip in targets:
                add_clip(graph, video, clip)
            shared = attempt % 3 == 2  # sometimes both threads share one driver
            res = _race((graph, graph if shared else other), targets, person, attempt)
            assert res[0].entity_id == res[1].entity_id, f"attempt {attempt}: {res}"
            assert sorted(r.created for r in res) == [False, True]
            counts = graph.counts()
            assert counts["Face"] == 1 and counts["Character"] == 1 and counts["FaceObs"] == 6
    finally:
        other.close()
