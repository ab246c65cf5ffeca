"""The benchmark's synthetic faces must behave like the product's identity threshold expects: observations of one
person clear it, observations of two people do not. (A noise scale fixed apart from the threshold once made every
"returning person" of the identity benchmark a new Face, so it timed a path that never matched.)"""

from __future__ import annotations

import numpy as np
import pytest

from bench.synth import face_noise, make_faces, observations_of
from m3graph.settings import Settings


def _mean_pairwise(a: np.ndarray, b: np.ndarray) -> float:
    return float((a @ b.T).mean())


@pytest.mark.parametrize("threshold", [0.6, 0.8, 0.93])
def test_same_person_clears_the_threshold_and_strangers_do_not(threshold: float) -> None:
    rng = np.random.default_rng(3)
    faces = make_faces(200, Settings().identity.face_dim, seed=1, threshold=threshold)
    same, other = [], []
    for i in range(200):
        seen = observations_of(faces.identities[i], 3, rng, faces.noise)
        same.append(_mean_pairwise(seen, faces.exemplars[i]))
        other.append(_mean_pairwise(seen, faces.exemplars[(i + 1) % 200]))
    assert np.median(same) == pytest.approx((1 + threshold) / 2, abs=0.01)
    assert min(same) > threshold
    assert max(other) < threshold


def test_the_product_threshold_leaves_room() -> None:
    threshold = Settings().face_match_threshold
    assert 0 < face_noise(threshold) < 1
    with pytest.raises(ValueError):
        face_noise(1.0)
