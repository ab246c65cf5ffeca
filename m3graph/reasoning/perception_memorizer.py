"""Memories written without any language model, from perception alone.

With no LLM configured, ingestion must still produce searchable memory: who was on screen when, and who
said what. Every line uses the clip's own `<face_N>`/`<voice_N>` tags, so the store links them structurally
and the controller sees them as `<character_K>`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from m3graph.graphdb.types import FaceCluster, VoiceCluster
from m3graph.perception.people import describe_people
from m3graph.perception.scene import describe_clip
from m3graph.reasoning.llm.base import Usage
from m3graph.settings import PerceptionConfig


@dataclass(frozen=True)
class ClipPerception:
    """One clip after identity resolution: clusters paired with the persistent entity ids they resolved to."""

    source_id: str
    clip_index: int
    start_s: float
    end_s: float
    faces: list[tuple[int, FaceCluster]] = field(default_factory=list)
    voices: list[tuple[int, VoiceCluster]] = field(default_factory=list)
    clip_path: str | None = None


@dataclass(frozen=True)
class Memorization:
    episodic: list[str]
    semantic: list[str]
    raw: str = ""  # the model's final raw output, kept for replay; empty for deterministic memorizers
    outcome: str = "deterministic"  # "model", or "fallback" when no attempt gave usable JSON
    attempts: list[str] = field(default_factory=list)  # every raw output, repairs included
    dropped: dict[str, int] = field(default_factory=dict)  # validation drops by reason
    notes: list[str] = field(default_factory=list)  # a few dropped items, for the stored record
    usage: Usage = field(default_factory=Usage)


def _span(cluster: FaceCluster) -> tuple[float, float]:
    times = [o.frame_time_s for o in cluster.observations]
    return min(times), max(times)


class PerceptionMemorizer:
    """Deterministic: on-screen presence, speaker-attributed utterances and the scene's look, in time order."""

    name = "perception"

    def __init__(self, perception: PerceptionConfig | None = None) -> None:
        self.perception = perception or PerceptionConfig()

    def memorize(self, clip: ClipPerception) -> Memorization:
        events: list[tuple[float, str]] = []
        for entity_id, cluster in clip.faces:
            first, last = _span(cluster)
            events.append((first, f"<face_{entity_id}> is on screen from {first:.1f} s to {last:.1f} s."))
        for entity_id, voice in clip.voices:
            for u in voice.utterances:
                text = " ".join(u.text.split())
                if text:
                    events.append((u.start_s, f'<voice_{entity_id}> says: "{text}"'))
        # What the frames show, so a clip without people still leaves a memory (issue 10).
        events.extend(describe_clip(clip.clip_path, clip.start_s, clip.end_s - clip.start_s))
        # People the face lines do not already name: counts, movement, entries and exits (issue 20).
        if self.perception.people_detector == "hog":
            seen = [(o.frame_time_s, o.bbox) for _, cluster in clip.faces for o in cluster.observations]
            events.extend(describe_people(clip.clip_path, clip.start_s, seen, self.perception.people_fps,
                                          self.perception.people_side_px))
        if len(clip.faces) > 1:
            together = " and ".join(f"<face_{eid}>" for eid, _ in sorted(clip.faces))
            events.append((clip.start_s, f"{together} appear in the same scene."))
        events.sort(key=lambda e: (e[0], e[1]))
        return Memorization(episodic=[text for _, text in events], semantic=[])
