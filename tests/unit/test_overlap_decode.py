"""Overlap-aware turns, the pure parts (m3graph/perception/overlap.py, voices.attach_rest): decoding the powerset
output of pyannote segmentation-3.0 on synthetic class sequences, stitching windows whose local speaker labels are
permuted, cutting a speech span into single-speaker pieces, and attaching what is not embedded. No model, no Neo4j."""

from __future__ import annotations

import numpy as np
import pytest

from m3graph.perception.overlap import (
    FRAME_STEP_S,
    POWERSET,
    Stretch,
    best_permutation,
    decode_powerset,
    split_span,
    stitch,
    stretches,
)
from m3graph.perception.voices import _Turn, attach_rest

F = FRAME_STEP_S


def _seq(*runs: tuple[int, int]) -> np.ndarray:
    """(class, frames) runs -> one class per frame."""
    return np.concatenate([np.full(n, c, dtype=np.int64) for c, n in runs])


def test_powerset_table_is_none_singles_then_pairs() -> None:
    assert POWERSET.sum(axis=1).tolist() == [0, 1, 1, 1, 2, 2, 2]
    assert [tuple(np.flatnonzero(r)) for r in POWERSET[4:]] == [(0, 1), (0, 2), (1, 2)]
    with pytest.raises(ValueError, match="0..6"):
        decode_powerset(np.array([0, 7]))


def test_decoder_finds_speakers_overlap_and_changes() -> None:
    # silence, speaker 1, speakers 1+2, speaker 2, silence, speaker 3, speaker 1 (a change with no pause)
    classes = _seq((0, 30), (1, 120), (4, 60), (2, 100), (0, 40), (3, 80), (1, 90))
    out = stretches(decode_powerset(classes))
    assert [(s.speakers, s.speaker) for s in out] == [(0, -1), (1, 0), (2, -1), (1, 1), (0, -1), (1, 2), (1, 0)]
    bounds = np.cumsum([30, 120, 60, 100, 40, 80, 90]) * F
    assert np.allclose([s.end_s for s in out], bounds, atol=1e-3)
    assert out[0].start_s == 0.0 and all(a.end_s == b.start_s for a, b in zip(out, out[1:], strict=False))


def test_a_flicker_shorter_than_min_run_does_not_cut_a_turn() -> None:
    classes = _seq((1, 100), (2, 3), (1, 100), (5, 2), (1, 50))  # 3 and 2 frames (< 0.1 s) of something else
    out = stretches(decode_powerset(classes))
    assert [(s.speakers, s.speaker) for s in out] == [(1, 0)]
    assert out[0].end_s == pytest.approx(255 * F, abs=1e-3)
    # 10 frames (0.17 s) of overlap is kept.
    kept = stretches(decode_powerset(_seq((1, 100), (4, 10), (1, 100))))
    assert [s.speakers for s in kept] == [1, 2, 1]


def test_stitching_carries_labels_across_windows_with_permuted_speakers() -> None:
    # One true sequence: speaker A for 250 frames, then B for 350. Window 2 numbers them the other way round.
    truth = decode_powerset(_seq((1, 250), (2, 350)))
    w1 = truth[0:400]
    w2 = truth[200:600][:, [1, 0, 2]]  # local speaker 0 of window 2 is B
    assert best_permutation(w1[200:400], w2[:200]) == (1, 0, 2)
    out = stitch([w1, w2], [0, 200], 600)
    assert np.array_equal(out, truth)
    # The seam (frame 300, where the nearest centre switches) is inside B's speech: no change is read there.
    assert [s.speaker for s in stretches(out)] == [0, 1]
    unpermuted = np.concatenate([w1[:300], w2[100:]])
    assert [s.speaker for s in stretches(unpermuted)] == [0, 1, 0]  # what a seam without the relabelling gives


def test_split_span_cuts_at_changes_and_keeps_overlap_apart() -> None:
    marks = [Stretch(0.0, 1.0, 0), Stretch(1.0, 4.0, 1, 0), Stretch(4.0, 5.0, 2), Stretch(5.0, 5.5, 1, 1),
             Stretch(5.5, 6.0, 0), Stretch(6.0, 9.0, 1, 1), Stretch(9.0, 9.5, 1, 2), Stretch(9.5, 9.9, 0)]
    solo, rest = split_span(0.5, 10.0, marks, min_solo_s=0.8)
    # 5.0-5.5 (speaker 1), a 0.5-s pause, 6.0-9.0 (speaker 1 again): one piece; 9.0-9.5 of speaker 2 is too short.
    assert solo == [(1.0, 4.0), (5.0, 9.0)]
    assert rest == [(0.5, 1.0), (4.0, 5.0), (9.0, 9.5), (9.5, 9.9), (9.9, 10.0)]
    # A pause between two DIFFERENT speakers is not bridged.
    solo, rest = split_span(0.0, 6.0, [Stretch(0.0, 2.0, 1, 0), Stretch(2.0, 2.5, 0), Stretch(2.5, 6.0, 1, 1)], 0.8)
    assert solo == [(0.0, 2.0), (2.5, 6.0)] and rest == [(2.0, 2.5)]


def test_attach_rest_widens_neighbours_without_touching_their_vectors() -> None:
    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    turns = [_Turn(1.0, 4.0, a), _Turn(5.0, 9.0, b)]
    out = attach_rest(turns, [(0.5, 1.0), (4.0, 4.6), (4.6, 5.0), (9.0, 9.5), (12.0, 13.0)])
    # 0.5-1.0 has no turn before it: it goes to the next; the two pieces after 4.0 chain onto the first turn;
    # 12-13 touches no turn and is dropped.
    assert [(t.start_s, t.end_s) for t in out] == [(0.5, 5.0), (5.0, 9.5)]
    assert out[0].embedding is a and out[1].embedding is b
    # The voiced span (what the vector came from, and what the voice snippet holds) stays the original one.
    assert [t.voiced for t in out] == [(1.0, 4.0), (5.0, 9.0)]
    assert attach_rest(out, [])[0].voiced == (1.0, 4.0) and attach_rest(turns, [])[0].voiced is None
