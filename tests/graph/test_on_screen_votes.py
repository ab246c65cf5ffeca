"""On-screen votes (m3graph/graphdb/on_screen.py) through `register_clip` against real Neo4j.

Faces are observed at 5 fps over given spans of the clip and voices speak given turns; vectors are far apart, so
every face and voice is its own entity and only the votes decide the characters. Each case is a clip with more than
one face or voice, so the meta-clip rule never fires and what joins is the on-screen rule alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import FaceCluster, FaceObservation, UtteranceObservation, VoiceCluster
from tests.helpers.graph import add_clip, face_dim, near, rng, rows, unit, variant, voice_dim, with_settings

Span = tuple[float, float]


def _face(label: int, base: np.ndarray, spans: Sequence[Span], gen: np.random.Generator) -> FaceCluster:
    times = [round(t, 1) for a, b in spans for t in np.arange(a, b, 0.2)]
    return FaceCluster(label=label, observations=[
        FaceObservation(frame_time_s=t, bbox=(0, 0, 40, 40), det_score=0.99, quality=30.0,
                        embedding=near(base, 0.99, gen).tolist()) for t in times])


def _voice(label: int, base: np.ndarray, turns: Sequence[Span], gen: np.random.Generator) -> VoiceCluster:
    return VoiceCluster(label=label, utterances=[
        UtteranceObservation(start_s=a, end_s=b, text=f"turn {a}", embedding=near(base, 0.99, gen).tolist())
        for a, b in turns])


def _register(graph: MemoryGraph, clip: int, faces: list[FaceCluster],
              voices: list[VoiceCluster]) -> tuple[list[int], list[int]]:
    face_res, voice_res = graph.register_clip(add_clip(graph, "v", clip), faces, voices)
    return [r.entity_id for r in face_res], [r.entity_id for r in voice_res]


def _votes(graph: MemoryGraph) -> dict[tuple[int, int], list[str]]:
    query = "MATCH (f:Face)-[r:SAME_AS]->(v:Voice) RETURN f.entity_id AS f, v.entity_id AS v, r.evidence AS evidence"
    return {(r["f"], r["v"]): sorted(r["evidence"]) for r in rows(graph, query)}


def _same(graph: MemoryGraph, a: int, b: int) -> bool:
    chars = graph.characters_of([a, b])
    return a in chars and chars.get(a) == chars.get(b)


def test_voice_speaking_while_its_face_is_alone_joins_it_and_the_switch_undoes_it(graph: MemoryGraph) -> None:
    g = rng(1)
    pa, pb = unit(face_dim(graph), g), unit(face_dim(graph), g)
    va, vb = unit(voice_dim(graph), g), unit(voice_dim(graph), g)
    # A is shown for the first half while voice A speaks two turns; B for the second half while voice B speaks.
    faces = [_face(0, pa, [(0, 15)], g), _face(1, pb, [(15, 30)], g)]
    voices = [_voice(0, va, [(1, 6), (8, 13)], g), _voice(1, vb, [(16, 21), (23, 28)], g)]
    (fa, fb), (xa, xb) = _register(graph, 0, faces, voices)
    assert _votes(graph) == {(fa, xa): ["v#0|on-screen"], (fb, xb): ["v#0|on-screen"]}
    assert _same(graph, fa, xa) and _same(graph, fb, xb) and not _same(graph, fa, fb)

    _register(graph, 0, faces, voices)  # a re-run changes nothing
    assert _votes(graph) == {(fa, xa): ["v#0|on-screen"], (fb, xb): ["v#0|on-screen"]}

    off = with_settings(graph, variant(graph.settings, memory={"on_screen_votes": False}))
    off.register_clip(add_clip(graph, "v", 0), faces, voices)  # the rule switched off removes its votes
    assert _votes(graph) == {}
    assert not _same(graph, fa, xa) and not _same(graph, fb, xb)


def test_listener_and_bystander_on_screen_get_no_vote(graph: MemoryGraph) -> None:
    g = rng(2)
    speaker, listener, bystander = (unit(face_dim(graph), g) for _ in range(3))
    v, v_listener = unit(voice_dim(graph), g), unit(voice_dim(graph), g)
    # Clip 0: the speaker is shown for half of the speech, a listener's reaction shot for the other half.
    _register(graph, 0, [_face(0, speaker, [(0, 14)], g), _face(1, listener, [(14, 30)], g)],
              [_voice(0, v, [(2, 12), (16, 26)], g), _voice(1, v_listener, [(28.0, 29.5)], g)])
    # Clip 1: the listener alone on screen the whole clip while both talk as much: no voice dominates the face.
    _register(graph, 1, [_face(0, listener, [(0, 30)], g)],
              [_voice(0, v, [(1, 6), (16, 21)], g), _voice(1, v_listener, [(8, 13), (23, 28)], g)])
    # Clip 2: a bystander is on screen beside the speaker all the time: no face is alone.
    _register(graph, 2, [_face(0, speaker, [(0, 30)], g), _face(1, bystander, [(0, 30)], g)],
              [_voice(0, v, [(1, 12), (14, 25)], g), _voice(1, v_listener, [(27, 29)], g)])
    assert _votes(graph) == {}


def test_long_enough_and_consistent_turns_only(graph: MemoryGraph) -> None:
    g = rng(3)
    pa, pb = unit(face_dim(graph), g), unit(face_dim(graph), g)
    va, vb = unit(voice_dim(graph), g), unit(voice_dim(graph), g)
    # Clip 0: voice A says 2 s while A is alone (under on_screen_min_s = 3): no vote; voice B dominates B: a vote.
    (fa, fb), (xa, xb) = _register(graph, 0, [_face(0, pa, [(0, 3)], g), _face(1, pb, [(3, 30)], g)],
                                   [_voice(0, va, [(0.5, 2.5)], g), _voice(1, vb, [(5, 15), (17, 28)], g)])
    assert _votes(graph) == {(fb, xb): ["v#0|on-screen"]}
    # Clip 1: voice A's time is mostly with A alone (10 of 13 s), but three of its four turns see B alone: the
    # turns disagree, no vote.
    _register(graph, 1, [_face(0, pa, [(0, 12)], g), _face(1, pb, [(12, 30)], g)],
              [_voice(0, va, [(1, 11), (14, 15), (18, 19), (22, 23)], g), _voice(1, vb, [(24, 29.8)], g)])
    assert _votes(graph) == {(fb, xb): ["v#0|on-screen", "v#1|on-screen"]}
    assert not _same(graph, fa, xa) and _same(graph, fb, xb)


def test_two_voices_of_one_face_merge_only_where_each_dominates(graph: MemoryGraph) -> None:
    g = rng(4)
    pa, pb = unit(face_dim(graph), g), unit(face_dim(graph), g)
    v1, v2, vb = (unit(voice_dim(graph), g) for _ in range(3))  # v1 and v2: one person's speech split in two
    # Clip 0: A alone the whole clip, its speech split between two voices: neither holds most of it, no vote.
    (fa,), (x1, x2) = _register(graph, 0, [_face(0, pa, [(0, 30)], g)],
                                [_voice(0, v1, [(1, 6), (8, 13)], g), _voice(1, v2, [(16, 21), (23, 28)], g)])
    assert _votes(graph) == {} and not _same(graph, x1, x2)
    # Clips 1 and 2: each voice speaks alone while A is alone (B and its voice share the clip): each votes for A,
    # and the face's character takes both voices, B stays apart.
    (fa1, fb), (y1, yb) = _register(graph, 1, [_face(0, pa, [(0, 15)], g), _face(1, pb, [(15, 30)], g)],
                                    [_voice(0, v1, [(1, 6), (8, 13)], g), _voice(1, vb, [(16, 28)], g)])
    assert (fa1, y1) == (fa, x1)
    assert _same(graph, fa, x1) and not _same(graph, x1, x2)  # one voice so far
    (fa2, _), (y2, _) = _register(graph, 2, [_face(0, pa, [(0, 15)], g), _face(1, pb, [(15, 30)], g)],
                                  [_voice(0, v2, [(2, 12)], g), _voice(1, vb, [(16, 28)], g)])
    assert (fa2, y2) == (fa, x2)
    assert _same(graph, x1, x2) and _same(graph, fa, x2)
    assert not _same(graph, fa, fb) and _same(graph, fb, yb)


def test_a_link_earlier_clips_contradict_in_this_clip_gets_no_vote(graph: MemoryGraph) -> None:
    g = rng(5)
    pa, pb, pc, other = (unit(face_dim(graph), g) for _ in range(4))
    va, vb = unit(voice_dim(graph), g), unit(voice_dim(graph), g)
    # Clip 0: A speaks while alone on screen, then B: two votes.
    (fa, fb), (xa, xb) = _register(graph, 0, [_face(0, pa, [(0, 15)], g), _face(1, pb, [(15, 30)], g)],
                                   [_voice(0, va, [(1, 6), (8, 13)], g), _voice(1, vb, [(16, 28)], g)])
    assert _votes(graph) == {(fa, xa): ["v#0|on-screen"], (fb, xb): ["v#0|on-screen"]}
    # Clip 1: B's photo is resolved to A's Face (a face recognition error) and shown alone while B speaks; A speaks
    # beside a stranger. A's voice, heard here, already owns that Face: B's voice gets no vote for it.
    (f1, _), (y1, y2) = _register(graph, 1, [_face(0, pa, [(0, 10), (20, 30)], g), _face(1, other, [(0, 10)], g)],
                                  [_voice(0, va, [(1, 9)], g), _voice(1, vb, [(21, 29)], g)])
    assert (f1, y1, y2) == (fa, xa, xb)
    # Clip 2: A is seen, then a listener C is shown alone for the rest while A's voice goes on: A's voice already
    # owns A's Face, seen here, so the listener gets no vote.
    (f2, fc), (y3, _) = _register(graph, 2, [_face(0, pa, [(0, 10)], g), _face(1, pc, [(10, 30)], g)],
                                  [_voice(0, va, [(12, 28)], g), _voice(1, vb, [(1, 2)], g)])
    assert (f2, y3) == (fa, xa)
    assert _votes(graph) == {(fa, xa): ["v#0|on-screen"], (fb, xb): ["v#0|on-screen"]}
    assert _same(graph, fa, xa) and _same(graph, fb, xb) and not _same(graph, fa, xb) and not _same(graph, fc, xa)
    # Without the earlier clip's evidence (the rule off there), the same clip 1 does vote: the guard is what held.
    with_settings(graph, variant(graph.settings, memory={"on_screen_votes": False})).register_clip(
        add_clip(graph, "v", 0), *_clusters_of_clip0(pa, pb, va, vb, g))
    _register(graph, 1, [_face(0, pa, [(0, 10), (20, 30)], g), _face(1, other, [(0, 10)], g)],
              [_voice(0, va, [(1, 9)], g), _voice(1, vb, [(21, 29)], g)])
    assert (fa, xb) in _votes(graph)


def _clusters_of_clip0(pa: np.ndarray, pb: np.ndarray, va: np.ndarray, vb: np.ndarray,
                       g: np.random.Generator) -> tuple[list[FaceCluster], list[VoiceCluster]]:
    return ([_face(0, pa, [(0, 15)], g), _face(1, pb, [(15, 30)], g)],
            [_voice(0, va, [(1, 6), (8, 13)], g), _voice(1, vb, [(16, 28)], g)])
