"""The on-screen rule's figures (m3graph/graphdb/on_screen.py), pure: which voice label votes for which face label."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from m3graph.graphdb.on_screen import on_screen_links
from m3graph.observations import FaceCluster, FaceObservation, UtteranceObservation, VoiceCluster

VEC = [1.0, 0.0]


def _face(label: int, spans: Sequence[tuple[float, float]], step: float = 0.2) -> FaceCluster:
    times = [round(a + k * step, 3) for a, b in spans for k in range(round((b - a) / step))]
    return FaceCluster(label=label, observations=[
        FaceObservation(frame_time_s=t, bbox=(0, 0, 40, 40), det_score=0.99, quality=1.0, embedding=VEC)
        for t in times])


def _voice(label: int, turns: Sequence[tuple[float, float]]) -> VoiceCluster:
    return VoiceCluster(label=label, utterances=[UtteranceObservation(start_s=a, end_s=b, embedding=VEC)
                                                 for a, b in turns])


def _pairs(faces: list[FaceCluster], voices: list[VoiceCluster]) -> list[tuple[int, int]]:
    return [(x.face_label, x.voice_label) for x in on_screen_links(faces, voices, min_s=3.0, dominance=0.6)]


def test_each_voice_votes_for_the_face_alone_while_it_speaks() -> None:
    links = on_screen_links([_face(0, [(0, 15)]), _face(1, [(15, 30)])],
                            [_voice(7, [(1, 6), (8, 13)]), _voice(8, [(16, 28)])], min_s=3.0, dominance=0.6)
    assert [(x.face_label, x.voice_label) for x in links] == [(0, 7), (1, 8)]
    assert links[0].alone_s == pytest.approx(10.0) and links[0].voice_share == pytest.approx(1.0)
    assert links[0].face_share == pytest.approx(1.0) and links[0].turn_share == 1.0


def test_a_missed_detection_does_not_break_the_stretch_but_a_gap_does() -> None:
    face = _face(0, [(0, 4.0), (4.2, 10)])  # one frame (4.0) missed
    assert _pairs([face, _face(1, [(20, 30)])], [_voice(0, [(1, 9)]), _voice(1, [(21, 29)])]) == [(0, 0), (1, 1)]
    # The face leaves the screen for most of the voice's speech: no vote (nothing on screen is not "alone").
    assert _pairs([_face(0, [(0, 3)]), _face(1, [(20, 30)])], [_voice(0, [(1, 9)]), _voice(1, [(21, 29)])]) == [(1, 1)]


def test_half_and_half_gives_nobody_a_vote() -> None:
    # One face, two voices with 10 s each: the listener's or the split voice's case; neither dominates the face.
    assert _pairs([_face(0, [(0, 30)])], [_voice(0, [(1, 11)]), _voice(1, [(15, 25)])]) == []
    # One voice, two faces shown 10 s each while it speaks: neither face dominates the voice.
    assert _pairs([_face(0, [(0, 12)]), _face(1, [(12, 30)])], [_voice(0, [(2, 22)])]) == []
    # Two faces visible together: none is alone.
    assert _pairs([_face(0, [(0, 30)]), _face(1, [(0, 30)])], [_voice(0, [(2, 22)]), _voice(1, [(25, 29)])]) == []
