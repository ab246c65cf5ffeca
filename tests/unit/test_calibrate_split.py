"""`m3graph calibrate voices --split/--embedder` (m3graph/perception/calibrate_media.py): thresholds are chosen on one
half of the labelled voices and scored on the other, and side-by-side embedder variants carry their own voice
settings. Pure functions and settings only: no model, no Neo4j."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from m3graph.perception.calibrate import Turn
from m3graph.perception.calibrate_media import (
    balanced_accuracy_at,
    split_librispeech,
    split_recordings,
    with_perception,
)
from m3graph.settings import IdentityConfig, PerceptionConfig, Settings


def test_librispeech_halves_are_disjoint_and_cover_all() -> None:
    files = [(Path(f"{s}-1-{i}.flac"), s) for s in ("367", "1688", "533", "2033", "3005", "1998", "2414", "2609",
                                                    "3080", "3331") for i in range(3)]
    choose, report = split_librispeech(files, "choose"), split_librispeech(files, "report")
    assert {s for _, s in choose} == {"1688", "1998", "2033", "2414", "2609"}  # sorted ids, first five
    assert {s for _, s in report} == {"3005", "3080", "3331", "367", "533"}
    assert sorted(choose + report) == sorted(files) == sorted(split_librispeech(files, "all"))


def test_recording_halves() -> None:
    recs = [("phone", Path("sample.wav"), [Turn("s", "A", 0.0, 1.0)])]
    recs += [("ami", Path(f"ami{i:02d}.wav"), []) for i in range(15)]
    choose, report = split_recordings(recs, "choose"), split_recordings(recs, "report")
    assert [r[1].stem for r in choose] == [f"ami{i:02d}" for i in range(7)]
    assert [r[1].stem for r in report] == ["sample"] + [f"ami{i:02d}" for i in range(7, 15)]
    assert split_recordings(recs, "all") == recs


def test_balanced_accuracy_at_a_threshold_by_hand() -> None:
    same, diff = np.array([0.9, 0.7, 0.5, 0.65]), np.array([0.2, 0.6, 0.4])
    # at 0.6: same >= 0.6 -> 3/4, diff < 0.6 -> 2/3 -> (0.75 + 0.6667) / 2
    assert balanced_accuracy_at(same, diff, 0.6) == pytest.approx((0.75 + 2 / 3) / 2)
    assert balanced_accuracy_at(same, diff, 0.45) == pytest.approx((1.0 + 2 / 3) / 2)


def test_variants_follow_their_embedder_unless_set() -> None:
    base = Settings()
    cam = with_perception(base, speaker_embedder="campplus")
    assert cam.identity.voice_dim == 192 and cam.voice_match_threshold == pytest.approx(0.45)
    assert cam.perception.voice_cluster_threshold == pytest.approx(0.40)
    back = with_perception(cam, speaker_embedder="resemblyzer")
    assert back.identity.voice_dim == 256 and back.perception.voice_cluster_threshold == pytest.approx(0.80)
    pinned = Settings(identity=IdentityConfig(voice_dim=256), perception=PerceptionConfig(voice_cluster_threshold=0.7))
    moved = with_perception(pinned, speaker_embedder="campplus", voice_turns="legacy")
    assert moved.identity.voice_dim == 256 and moved.perception.voice_cluster_threshold == 0.7
    assert moved.perception.voice_pooled_threshold == pytest.approx(0.45)  # not set: follows
    assert moved.perception.voice_turns == "legacy"


def test_solo_spans_cut_out_other_speakers() -> None:
    from m3graph.perception.calibrate_media import solo_spans

    a = Turn("r", "A", 0.0, 10.0)
    turns = [a, Turn("r", "B", 2.0, 3.0), Turn("r", "C", 2.5, 4.0), Turn("r", "B", 9.0, 12.0),
             Turn("r", "D", 10.0, 11.0)]
    assert solo_spans(a, turns) == [(0.0, 2.0), (4.0, 9.0)]
    assert solo_spans(turns[4], turns) == []  # D speaks only while B does
