"""The per-clip ingestion steps, shared by the Celery tasks and the in-process mode.

Each step is idempotent and keyed by (video, clip): media and perception results are cached as files
under ``<data_dir>/videos/<video>/`` (a retry skips finished work, and results can be inspected), and the
graph step runs in one transaction. Nothing reaches the graph until a clip's perception is complete; if
memorization fails afterwards, the clip is deleted again (with everything it changed on entities), so a
failed clip never stays half-written. Perception may run in parallel across clips; `commit_clip` must run
in clip order per video, because the ids it allocates are the `<face_N>`/`<voice_N>` tags later clips see.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import TypeAdapter

from m3graph.embedding import TextEmbedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo, FaceCluster, MemoryIn, VoiceCluster
from m3graph.reasoning.perception_memorizer import ClipPerception, Memorization, PerceptionMemorizer
from m3graph.settings import Settings

log = logging.getLogger(__name__)
_FACES = TypeAdapter(list[FaceCluster])
_VOICES = TypeAdapter(list[VoiceCluster])


class Memorizer(Protocol):
    name: str

    def memorize(self, clip: ClipPerception) -> Memorization: ...


@dataclass(frozen=True)
class ClipWork:
    """Where one clip's intermediate files live; pure paths, no I/O."""

    settings: Settings
    video_id: str
    index: int

    @property
    def root(self) -> Path:
        return self.settings.data_dir / "videos" / self.video_id

    @property
    def clip(self) -> Path:
        return self.root / "clips" / f"{self.index:05d}.mp4"

    @property
    def audio(self) -> Path:
        return self.root / "audio" / f"{self.index:05d}.wav"

    @property
    def faces(self) -> Path:
        return self.root / "perception" / f"clip_{self.index}_faces.json"

    @property
    def voices(self) -> Path:
        return self.root / "perception" / f"clip_{self.index}_voices.json"

    @property
    def memory(self) -> Path:
        return self.root / "memory" / f"clip_{self.index}_memory.json"

    @property
    def crops(self) -> Path:
        return self.root / "crops" / f"{self.index:05d}"

    @property
    def snippets(self) -> Path:
        return self.root / "snippets" / f"{self.index:05d}"


@dataclass(frozen=True)
class Window:
    """One clip: its place on the video's timeline, and where its media comes from."""

    index: int
    start_s: float
    end_s: float
    source: str
    source_start_s: float  # offset of this clip inside `source` (a live stream arrives as several files)


@dataclass(frozen=True)
class VideoPlan:
    video_id: str
    windows: list[Window]
    has_audio: bool = True

    def window(self, index: int) -> Window:
        for w in self.windows:
            if w.index == index:
                return w
        raise KeyError(f"video {self.video_id} has no clip {index}")

    @property
    def duration_s(self) -> float:
        return max((w.end_s for w in self.windows), default=0.0)


def _plan_path(settings: Settings, video_id: str) -> Path:
    return settings.data_dir / "videos" / video_id / "plan.json"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _save(settings: Settings, plan: VideoPlan) -> None:
    _atomic_write(_plan_path(settings, plan.video_id), json.dumps(
        {"video_id": plan.video_id, "has_audio": plan.has_audio, "windows": [w.__dict__ for w in plan.windows]}))


def load_plan(settings: Settings, video_id: str) -> VideoPlan:
    path = _plan_path(settings, video_id)
    if not path.exists():
        return VideoPlan(video_id=video_id, windows=[])
    data = json.loads(path.read_text(encoding="utf-8"))
    return VideoPlan(video_id=data["video_id"], has_audio=data["has_audio"],
                     windows=[Window(**w) for w in data["windows"]])


def plan_video(settings: Settings, source: Path, video_id: str, append: bool = False) -> VideoPlan:
    """Probes `source` (clear errors for bad input) and fixes its clip windows.

    With `append`, the file continues the video's timeline (live mode: each new file of a stream becomes the
    next clips); re-planning a file that is already in the plan changes nothing.
    """
    from m3graph.ingest.video import plan_clips, probe

    resolved = str(source.resolve())
    existing = load_plan(settings, video_id) if append else VideoPlan(video_id=video_id, windows=[])
    if any(w.source == resolved for w in existing.windows):
        return existing
    info = probe(source, settings)
    first, offset = len(existing.windows), existing.duration_s
    added = [Window(index=first + w.index, start_s=offset + w.start_s, end_s=offset + w.end_s, source=resolved,
                    source_start_s=w.start_s) for w in plan_clips(info.duration_s, settings.clip_seconds)]
    plan = VideoPlan(video_id=video_id, windows=existing.windows + added,
                     has_audio=existing.has_audio if existing.windows else info.has_audio)
    _save(settings, plan)
    return plan


def cut_stage(settings: Settings, plan: VideoPlan, index: int) -> ClipWork:
    from m3graph.ingest.video import ClipWindow, cut_clip, extract_audio

    work = ClipWork(settings, plan.video_id, index)
    w = plan.window(index)
    work.clip.parent.mkdir(parents=True, exist_ok=True)
    cut_clip(Path(w.source), ClipWindow(index=index, start_s=w.source_start_s,
                                        end_s=w.source_start_s + (w.end_s - w.start_s)), work.clip)
    if not work.audio.exists():
        work.audio.parent.mkdir(parents=True, exist_ok=True)
        extract_audio(work.clip, work.audio)  # None (no file) when the clip has no audio track
    return work


def faces_stage(settings: Settings, plan: VideoPlan, index: int) -> list[FaceCluster]:
    from m3graph.ingest.video import sample_frames
    from m3graph.perception.faces import perceive_faces

    work = ClipWork(settings, plan.video_id, index)
    if work.faces.exists():
        return _FACES.validate_json(work.faces.read_bytes())
    frames = sample_frames(work.clip, settings.fps, settings)
    clusters = perceive_faces(frames, settings, work.crops, plan.window(index).start_s)
    _atomic_write(work.faces, _FACES.dump_json(clusters).decode())
    return clusters


def voices_stage(settings: Settings, plan: VideoPlan, index: int) -> list[VoiceCluster]:
    from m3graph.perception.voices import perceive_voices

    work = ClipWork(settings, plan.video_id, index)
    if work.voices.exists():
        return _VOICES.validate_json(work.voices.read_bytes())
    start = plan.window(index).start_s
    clusters = perceive_voices(work.audio, settings, start, work.snippets) if work.audio.exists() else []
    _atomic_write(work.voices, _VOICES.dump_json(clusters).decode())
    return clusters


@dataclass(frozen=True)
class ClipReport:
    video_id: str
    clip_index: int
    faces: list[int]
    voices: list[int]
    new_entities: int
    memories: int


def commit_clip(graph: MemoryGraph, embedder: TextEmbedder, memorizer: Memorizer, plan: VideoPlan,
                index: int) -> ClipReport:
    """Resolve identities, memorize and write: the ordered, graph-touching step of one clip."""
    settings = graph.settings
    work = ClipWork(settings, plan.video_id, index)
    faces = _FACES.validate_json(work.faces.read_bytes())
    voices = _VOICES.validate_json(work.voices.read_bytes())
    start, end = plan.window(index).start_s, plan.window(index).end_s
    clip = ClipInfo(video_id=plan.video_id, clip_index=index, start_s=start, end_s=end, uri=str(work.clip))
    face_res, voice_res = graph.register_clip(clip, faces, voices, video_name=plan.video_id)
    try:
        face_ids = {r.label: r.entity_id for r in face_res}
        voice_ids = {r.label: r.entity_id for r in voice_res}
        perception = ClipPerception(
            video_id=plan.video_id, clip_index=index, start_s=start, end_s=end, clip_path=str(work.clip),
            faces=[(face_ids[c.label], c) for c in faces], voices=[(voice_ids[c.label], c) for c in voices])
        memo = memorizer.memorize(perception)
        _atomic_write(work.memory, json.dumps({
            "memorizer": memorizer.name, "outcome": memo.outcome, "episodic": memo.episodic,
            "semantic": memo.semantic, "raw": memo.raw, "attempts": memo.attempts, "dropped": memo.dropped,
            "notes": memo.notes, "usage": {"prompt_tokens": memo.usage.prompt_tokens,
                                           "completion_tokens": memo.usage.completion_tokens},
            "faces": face_ids, "voices": voice_ids}, ensure_ascii=False))
        texts = [("episodic", t) for t in memo.episodic] + [("semantic", t) for t in memo.semantic]
        vectors = embedder.embed([t for _, t in texts])
        memories = [MemoryIn(kind=k, text=t, embedding=v.tolist())  # type: ignore[arg-type]
                    for (k, t), v in zip(texts, vectors, strict=True)]
        graph.write_memories(plan.video_id, index, memories)
        graph.set_clip_status(plan.video_id, index, "done", None if memo.outcome != "fallback"
                              else "memorization model gave no usable output; perception memories only")
    except BaseException:
        log.exception("clip %s#%d failed after identity resolution; removing it", plan.video_id, index)
        graph.delete_clip(plan.video_id, index)
        raise
    created = sum(r.created for r in [*face_res, *voice_res])
    return ClipReport(plan.video_id, index, sorted(face_ids.values()), sorted(voice_ids.values()), created,
                      len(memories))


Progress = Callable[[str, int, int, str], None]  # (video, clip index, clip count, stage)


def ingest_video_inprocess(graph: MemoryGraph, embedder: TextEmbedder, source: Path, video_id: str,
                           memorizer: Memorizer | None = None, progress: Progress | None = None,
                           append: bool = False) -> list[ClipReport]:
    """The whole workflow without a broker: faces and voices of a clip in parallel threads, clips in order."""
    settings = graph.settings
    memorizer = memorizer or PerceptionMemorizer()
    resolved = str(source.resolve())
    plan = plan_video(settings, source, video_id, append=append)
    reports = []
    indexes = [w.index for w in plan.windows if w.source == resolved]
    for index in indexes:
        note = progress or (lambda *_: None)
        note(video_id, index, len(plan.windows), "cut")
        cut_stage(settings, plan, index)
        note(video_id, index, len(plan.windows), "perceive")
        with ThreadPoolExecutor(max_workers=2) as pool:
            f = pool.submit(faces_stage, settings, plan, index)
            v = pool.submit(voices_stage, settings, plan, index)
            f.result(), v.result()
        note(video_id, index, len(plan.windows), "memorize")
        reports.append(commit_clip(graph, embedder, memorizer, plan, index))
        note(video_id, index, len(plan.windows), "done")
    return reports
