"""The pure half of identity resolution (`m3graph.graphdb.identity.decide`, `cannot_link`, `EntityState.merged`),
without a server: which entity each per-clip cluster becomes, given the exact scores the match query returns.

The graph tier (tests/graph/test_identity.py) checks the same rules through the store; these pin the decision
itself, case by case, so a change of a comparison or a tie-break fails here in a second.
"""

from __future__ import annotations

import numpy as np
import pytest

from m3graph.graphdb.identity import ClusterQuery, EntityState, cannot_link, decide

DIM = 8


def _basis(i: int) -> np.ndarray:
    v = np.zeros(DIM)
    v[i] = 1.0
    return v


def _cluster(label: int, direction: np.ndarray, n: int = 2, spans: list[tuple[float, float]] | None = None
             ) -> ClusterQuery:
    """`n` identical observations along `direction`, all used for matching."""
    vectors = np.tile(direction / np.linalg.norm(direction), (n, 1))
    return ClusterQuery(label, vectors, [1.0] * n, [f"k#{label}#{i}" for i in range(n)],
                        spans if spans is not None else [(float(label * 100), float(label * 100))], list(range(n)))


def test_a_score_at_the_threshold_matches_and_one_below_creates() -> None:
    clusters = [_cluster(0, _basis(0)), _cluster(1, _basis(1))]
    out = decide(clusters, {0: {7: 0.5}, 1: {8: 0.4999}}, threshold=0.5, forbidden=set())
    assert out[0] == (7, 0.5)
    assert out[1] == (-1, None)  # a new entity: placeholder -1, no score


def test_the_best_score_wins_and_ties_go_to_the_older_entity() -> None:
    clusters = [_cluster(0, _basis(0)), _cluster(1, _basis(1))]
    out = decide(clusters, {0: {3: 0.6, 9: 0.9, 5: 0.7}, 1: {12: 0.8, 4: 0.8}}, threshold=0.3, forbidden=set())
    assert out[0] == (9, 0.9)
    assert out[1] == (4, 0.8)


def test_co_occurring_clusters_never_share_an_entity_and_the_larger_one_chooses_first() -> None:
    big = _cluster(1, _basis(0), n=5)
    small = _cluster(0, _basis(1), n=2)
    candidates = {0: {7: 0.95, 8: 0.6}, 1: {7: 0.8}}
    out = decide([small, big], candidates, threshold=0.5, forbidden={frozenset((0, 1))})
    assert out[1] == (7, 0.8)  # the larger cluster decides first, though the smaller one scores higher
    assert out[0] == (8, 0.6)  # its best entity is taken by a cluster seen at the same time: the next one


def test_clusters_that_do_not_co_occur_may_both_match_one_entity() -> None:
    out = decide([_cluster(0, _basis(0)), _cluster(1, _basis(1))], {0: {7: 0.9}, 1: {7: 0.8}}, threshold=0.5,
                 forbidden=set())
    assert out == {0: (7, 0.9), 1: (7, 0.8)}


def test_with_no_candidate_left_a_co_occurring_cluster_becomes_a_new_entity() -> None:
    out = decide([_cluster(0, _basis(0), n=3), _cluster(1, _basis(1))], {0: {7: 0.9}, 1: {7: 0.9}},
                 threshold=0.5, forbidden={frozenset((0, 1))})
    assert out == {0: (7, 0.9), 1: (-1, None)}


def test_a_cluster_joins_a_new_entity_created_earlier_in_the_same_clip() -> None:
    first = _cluster(0, _basis(0), n=3)
    same_person = _cluster(1, _basis(0) + 0.1 * _basis(1))  # cosine 0.995 to the first cluster's mean
    stranger = _cluster(2, _basis(2))
    out = decide([first, same_person, stranger], {}, threshold=0.5, forbidden=set())
    assert out == {0: (-1, None), 1: (-1, None), 2: (-2, None)}


def test_a_new_entity_of_a_co_occurring_cluster_is_not_joined() -> None:
    out = decide([_cluster(0, _basis(0), n=3), _cluster(1, _basis(0))], {}, threshold=0.5,
                 forbidden={frozenset((0, 1))})
    assert out == {0: (-1, None), 1: (-2, None)}


def test_cannot_link_pairs_clusters_seen_at_the_same_instant_or_overlapping_in_time() -> None:
    faces = [_cluster(0, _basis(0), spans=[(1.0, 1.0), (2.0, 2.0)]), _cluster(1, _basis(1), spans=[(2.0, 2.0)]),
             _cluster(2, _basis(2), spans=[(3.0, 3.0)])]
    assert cannot_link(faces) == {frozenset((0, 1))}
    voices = [_cluster(0, _basis(0), spans=[(0.0, 2.0)]), _cluster(1, _basis(1), spans=[(1.5, 3.0)]),
              _cluster(2, _basis(2), spans=[(3.0, 4.0)])]  # touching at 3.0 is not overlapping
    assert cannot_link(voices) == {frozenset((0, 1))}


def test_exemplars_keep_the_best_quality_and_ties_go_to_the_first_observation_key() -> None:
    state = EntityState(5, np.vstack([_basis(0), _basis(1)]), [0.9, 0.5], ["b", "d"])
    merged = state.merged(np.vstack([_basis(2), _basis(3)]), [0.5, 0.95], ["c", "a"], cap=3)
    assert merged.obs == ["a", "b", "c"]  # 0.95, 0.9, then the 0.5 tie goes to "c" before "d"
    assert merged.quality == [0.95, 0.9, 0.5]
    np.testing.assert_allclose(merged.centroid, (_basis(3) + _basis(0) + _basis(2)) / 3)


@pytest.mark.parametrize("cap", [1, 2])
def test_the_exemplar_cap_holds(cap: int) -> None:
    state = EntityState(5, np.vstack([_basis(0)]), [0.1], ["z"])
    merged = state.merged(np.vstack([_basis(1), _basis(2)]), [0.3, 0.2], ["x", "y"], cap=cap)
    assert merged.obs == ["x", "y"][:cap] and merged.entity_id == 5
