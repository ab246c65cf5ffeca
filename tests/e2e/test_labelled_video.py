"""The labelled test video of real people (issue 10), short version, through the whole pipeline against real Neo4j.

90 s, 3 clips, 3 synthetic people (a real face identity paired with a real LibriSpeech speaker, see
m3graph/devkit/labelled_media.py): clip 0 shows P0 then P1, clip 1 P2 alone (a meta-clip), clip 2 P1 then P0, each
appearance with another photo of the person. The shared identity set lives in ../shared beside the repository; a
missing set FAILS the session instead of skipping (as tests/e2e/test_calibrate.py)."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from itertools import pairwise  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from m3graph.devkit.labelled_media import (  # noqa: E402
    SHORT_LAYOUT,
    LabelledScore,
    LabelledVideo,
    build_labelled_video,
    evaluate_labelled,
    revote_labelled,
)
from m3graph.embedding import text_embedder  # noqa: E402
from m3graph.graphdb.store import MemoryGraph  # noqa: E402
from m3graph.ingest.pipeline import ingest_video_inprocess  # noqa: E402
from m3graph.settings import Settings  # noqa: E402
from tests.helpers.graph import variant, wipe, with_settings

REPO = Path(__file__).resolve().parents[2]
IDENTITY = REPO.parent / "shared" / "data" / "identity"


@pytest.fixture(scope="module")
def video() -> LabelledVideo:
    if not (IDENTITY / "faces" / "identities.csv").is_file():
        pytest.fail(f"the shared identity set is missing: {IDENTITY} (part of the project's checkout)")
    return build_labelled_video(IDENTITY, REPO / ".m3graph" / "labelled", SHORT_LAYOUT, seed=0,
                                source_id="labelled-short")


@pytest.fixture(scope="module")
def ingested(memory_graph: MemoryGraph, video: LabelledVideo, tmp_path_factory: pytest.TempPathFactory) -> MemoryGraph:
    wipe(memory_graph)
    settings = variant(memory_graph.settings, identity={"face_threshold": None, "voice_threshold": None})
    graph = with_settings(memory_graph, settings.model_copy(update={"data_dir": tmp_path_factory.mktemp("data")}))
    ingest_video_inprocess(graph, text_embedder(graph.settings), Path(video.path), video.source_id)
    return graph


@pytest.fixture(scope="module")
def score(ingested: MemoryGraph, video: LabelledVideo) -> LabelledScore:
    result = evaluate_labelled(ingested, video)
    print("\n" + result.format())  # the measured figures, with -s
    return result


def test_manifest_is_ground_truth(video: LabelledVideo) -> None:
    assert video.duration_s == 90.0 and len(video.pairs) == 3
    assert len({p["face_identity"] for p in video.pairs.values()}) == 3
    assert len({p["speaker"] for p in video.pairs.values()}) == 3
    edges = [(s.start_s, s.end_s) for s in video.segments]
    assert edges[0][0] == 0 and edges[-1][1] == 90.0 and all(a[1] == b[0] for a, b in pairwise(edges))
    for seg in video.segments:
        assert seg.clip_index == int(seg.start_s // 30) and seg.end_s <= (seg.clip_index + 1) * 30
        assert seg.utterances and all(seg.start_s < u.start_s < u.end_s < seg.end_s for u in seg.utterances)
        assert all(u.speaker == video.pairs[seg.person]["speaker"] for u in seg.utterances)
        assert (IDENTITY / seg.photo).is_file() and seg.face_identity == video.pairs[seg.person]["face_identity"]
    for person in ("P0", "P1"):  # recurring people are shown with different photos of them
        photos = [s.photo for s in video.segments if s.person == person]
        assert len(photos) == 2 and len(set(photos)) == 2
    assert video.meta_clips() == [(1, "P2")]
    again = build_labelled_video(IDENTITY, REPO / ".m3graph" / "labelled", SHORT_LAYOUT, seed=0,
                                 source_id="labelled-short")
    assert again.fingerprint == video.fingerprint and again.segments == video.segments


# Measured (docs/evaluation.md "Labelled test video (real people)"): one Face per person across photos and clips, and
# no Face or Voice entity mixes two people. Voices follow the configured speaker embedder: with CAM++ (the default
# since issue 20) one Voice per person, pairwise P / R 1.000 / 1.000. With Resemblyzer P0's two utterances in clip 0
# became two Voices (cosine 0.74 while P1's turn there scores 0.71 and 0.73 with them, so no threshold separates the
# speakers), which is why test_one_voice_entity_per_person is a strict xfail under Resemblyzer only. P1's clip-2 photo
# (img31) shows a bystander behind the person: a face of its own, left out of the score (the person is the largest
# face of a frame) and listed apart.


def test_one_face_entity_per_person(score: LabelledScore) -> None:
    assert score.segments_with_face == 1.0  # every segment's face was detected
    assert all(len(ids) == 1 for ids in score.face_entities_of.values()), score.face_by_clip
    assert len({ids[0] for ids in score.face_entities_of.values()}) == 3  # three people, three faces
    assert score.faces.precision == 1.0 and score.faces.recall == 1.0
    assert set(score.face_by_clip["P0"]) == {0, 2} and set(score.face_by_clip["P1"]) == {0, 2}  # two photos each
    assert len(score.bystander_faces) <= 1  # the bystander of img31, a Face of its own


def test_voices_never_mix_speakers(score: LabelledScore) -> None:
    assert score.speech_covered >= 0.8
    assert score.voices.precision >= 0.99  # no Voice entity holds two speakers
    assert all(len(ids) <= 2 for ids in score.voice_entities_of.values()) and score.voice_entities <= 4
    assert score.voices.recall >= 0.9


@pytest.mark.xfail(Settings().perception.speaker_embedder == "resemblyzer", strict=True,
                   reason="issue 10: with Resemblyzer P0's two turns in clip 0 (cosine 0.74) split into two Voices; "
                   "the other speaker there scores 0.73 (CAM++ gives one Voice per person: issue 20)")
def test_one_voice_entity_per_person(score: LabelledScore) -> None:
    assert all(len(ids) == 1 for ids in score.voice_entities_of.values()), score.voice_entities_of


def test_meta_clip_joins_face_and_voice(score: LabelledScore) -> None:
    assert score.joined["P2"]  # clip 1 holds P2 alone: one face, one voice, one character
    assert score.merged_characters == 0  # no character mixes two people


# On-screen votes (issue 20, m3graph/graphdb/on_screen.py): in clips 0 and 2 each person speaks while their photo is
# alone on screen, so each voice votes for its face; meta-clip votes alone join only P2 (the one-person clip 1).
# Measured: 3 of 3 joined, 1 of 3 with the rule off, no character mixing people, with CAM++ and with Resemblyzer (whose
# split of P0's clip-0 speech into two Voices gives no vote there; P0's main Voice votes in clip 2).
def test_on_screen_votes_join_every_person(ingested: MemoryGraph, video: LabelledVideo, score: LabelledScore) -> None:
    assert ingested.settings.memory.on_screen_votes
    assert score.joined == {"P0": True, "P1": True, "P2": True}, score.format()
    assert score.merged_characters == 0
    try:  # the same perception and entities, meta-clip votes only: the rule is what joins P0 and P1
        off = revote_labelled(ingested, video, on_screen_votes=False)
        assert off.joined == {"P0": False, "P1": False, "P2": True} and off.merged_characters == 0, off.format()
    finally:
        again = revote_labelled(ingested, video, on_screen_votes=True)
    assert again.joined == score.joined  # switching back restores the votes exactly
