"""On-screen votes: a voice whose speech coincides with one face, alone on screen, is that face's voice.

The meta-clip rule (one face cluster and one voice cluster in the whole clip) links a face and a voice only in
clips with a single person; a clip that shows two people one after the other, each speaking while shown, links
nobody. This rule looks inside the clip: per-frame face detections (times on the video's timeline) against the
voice's turn spans. A face is *alone* at a moment when it is the only Face entity detected within one sampling
step of it (5 fps: a single missed detection does not break a stretch).

A voice V votes for a face F only when both directions agree, so that a listener or a bystander on screen is not
taken for the speaker:

* **the face is visible during most of the voice's speech**: the time V speaks while F is alone is at least
  ``min_s`` seconds and at least ``dominance`` of V's speech time in the clip (any face or none);
* **the turns agree**: at least ``dominance`` of V's turns that see any face alone see F alone the most;
* **the voice covers most of the speech while that face is alone**: V's time is at least ``dominance`` of all the
  clip's speech (every voice) while F is alone. A reaction shot of a listener F while another person V speaks,
  with F's own voice heard while F is shown, fails this for V.

Two voices that split one person's speech inside one clip fail the last condition each (each holds about half of
it); across clips each votes for the face wherever it dominates, and the argmax grouping then puts both voices in
the face's character (characters.py): a split is merged by the votes, never by lowering a voice threshold.

Pure (no database): `store.MemoryGraph.register_clip` writes its votes through the one SAME_AS path.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from m3graph.observations import FaceCluster, VoiceCluster

STEP_S = 0.2  # the face sampling step (5 fps); speech is scanned on this grid


@dataclass(frozen=True)
class OnScreenLink:
    """Why a voice label votes for a face label (figures kept for reports and tests)."""

    face_label: int  # the face cluster's label, or its entity id when the caller maps labels to entities
    voice_label: int
    alone_s: float  # the voice's speech with this face alone on screen
    voice_share: float  # of the voice's speech
    face_share: float  # of all speech while this face is alone
    turn_share: float  # of the voice's turns that see a face alone


def _alone_face(times: dict[int, list[float]], t: float, tol: float) -> int | None:
    present = [label for label, ts in times.items() if _near(ts, t, tol)]
    return present[0] if len(present) == 1 else None


def _near(sorted_times: list[float], t: float, tol: float) -> bool:
    i = bisect_left(sorted_times, t - tol)
    return i < len(sorted_times) and sorted_times[i] <= t + tol


def on_screen_links(faces: Sequence[FaceCluster], voices: Sequence[VoiceCluster], *, min_s: float,
                    dominance: float, step_s: float = STEP_S, face_ids: Mapping[int, int] | None = None,
                    voice_ids: Mapping[int, int] | None = None) -> list[OnScreenLink]:
    """The (face, voice) pairs of one clip that pass all three conditions (see the module doc).

    With `face_ids` / `voice_ids` (cluster label -> entity id) the rule counts entities, not clusters: two face
    clusters resolved to one Face are one face on screen (so two people whose photos were resolved to one Face
    share its speech and neither dominates it), and two voice clusters resolved to one Voice are one voice. The
    returned labels are then entity ids; clusters missing from a given map take no part.
    """
    fkey = face_ids if face_ids is not None else {f.label: f.label for f in faces}
    vkey = voice_ids if voice_ids is not None else {v.label: v.label for v in voices}
    frames: dict[int, list[float]] = defaultdict(list)
    for f in faces:
        if f.label in fkey:
            frames[fkey[f.label]].extend(o.frame_time_s for o in f.observations)
    times = {k: sorted(ts) for k, ts in frames.items()}
    voices = [v.model_copy(update={"label": vkey[v.label]}) for v in voices if v.label in vkey]
    tol = step_s * 1.01
    speech: dict[int, float] = defaultdict(float)  # voice -> seconds of speech
    alone: dict[tuple[int, int], float] = defaultdict(float)  # (face, voice) -> seconds
    face_speech: dict[int, float] = defaultdict(float)  # face -> seconds of anyone's speech while it is alone
    turns_of: dict[int, list[int]] = defaultdict(list)  # voice -> per turn, the face alone the most
    for v in voices:
        for u in v.utterances:
            seen: Counter[int] = Counter()
            n = max(1, round((u.end_s - u.start_s) / step_s))
            for k in range(n):
                t = u.start_s + (k + 0.5) * (u.end_s - u.start_s) / n
                speech[v.label] += step_s
                face = _alone_face(times, t, tol)
                if face is not None:
                    seen[face] += 1
                    alone[(face, v.label)] += step_s
                    face_speech[face] += step_s
            if seen:
                turns_of[v.label].append(seen.most_common(1)[0][0])
    links = []
    for (face, voice), secs in sorted(alone.items()):
        turns = turns_of[voice]
        link = OnScreenLink(face, voice, secs, secs / speech[voice], secs / face_speech[face],
                            turns.count(face) / len(turns) if turns else 0.0)
        if (link.alone_s >= min_s and link.voice_share >= dominance and link.face_share >= dominance
                and link.turn_share >= dominance):
            links.append(link)
    return links
