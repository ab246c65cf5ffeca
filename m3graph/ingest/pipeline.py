"""The per-clip ingestion steps, shared by the Celery tasks and the in-process mode.

Each step is idempotent and keyed by (video, clip): media and perception results are stored under the keys
``videos/<video>/...`` of the media store (m3graph.storage: the data directory by default, or an S3-compatible
bucket), so a retry skips finished work, results can be inspected, and a step may run on another host than the
one before it. Cutting and perception work on local scratch files (``<data_dir>/<key>``); what later steps and
other components need (cuts, audio, crops, snippets, perception caches, plan, model outputs) is put into the
store, and the graph holds keys, never host paths. A clip's
progress is its state on the `Clip` node (m3graph/graphdb/clip_state.py): planned → perceived → resolved →
memorized. Two graph steps per clip:

* *resolve* (`resolve_clip`): clip, identities and meta-clip vote in one transaction; must run in clip order
  per video, because the ids it allocates are the `<face_N>`/`<voice_N>` tags later clips see. A failure
  leaves the graph as it was (state `resolve_failed`).
* *memorize* (`memorize_clip`): the slow model call, then the clip's memories in one transaction; any order,
  replaceable. A failure keeps what the clip had (state `memorize_failed`); nothing is ever deleted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from m3graph.data_files import ClipFiles
from m3graph.embedding import TextEmbedder
from m3graph.errors import M3GraphError, NotFoundError
from m3graph.file_locks import exclusive
from m3graph.graphdb.clip_state import ClipState
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo, FaceCluster, MemoryIn, VoiceCluster, check_source_id
from m3graph.ingest.clip_media import (
    FACES,
    VOICES,
    keyed_faces,
    keyed_voices,
    load_faces,
    load_voices,
    local_crops,
    publish_folder,
    scratch_copy,
    stored_bytes,
)
from m3graph.reasoning.perception_memorizer import ClipPerception, Memorization, PerceptionMemorizer
from m3graph.settings import Settings
from m3graph.storage import fetch, media_store, publish

log = logging.getLogger(__name__)
_FACES = FACES
_VOICES = VOICES


class Memorizer(Protocol):
    name: str

    def memorize(self, clip: ClipPerception) -> Memorization: ...


ClipWork = ClipFiles  # the layout of a clip's files lives in m3graph.data_files (deletion uses it too)


@dataclass(frozen=True)
class Window:
    """One clip: its place on the video's timeline, and where its media comes from."""

    index: int
    start_s: float
    end_s: float
    source: str
    source_start_s: float  # offset of this clip inside `source` (a live stream arrives as several files)
    # The source's copy in an object store, for workers on hosts where `source` is not (None: local store).
    source_key: str | None = None


@dataclass(frozen=True)
class VideoPlan:
    source_id: str
    windows: list[Window]
    has_audio: bool = True

    def window(self, index: int) -> Window:
        for w in self.windows:
            if w.index == index:
                return w
        raise NotFoundError(f"video {self.source_id} has no clip {index}")

    @property
    def duration_s(self) -> float:
        return max((w.end_s for w in self.windows), default=0.0)


def _plan_key(source_id: str) -> str:
    return f"videos/{source_id}/plan.json"


def save_plan(settings: Settings, plan: VideoPlan) -> None:
    media_store(settings).put_bytes(_plan_key(plan.source_id), json.dumps(
        {"source_id": plan.source_id, "has_audio": plan.has_audio,
         "windows": [w.__dict__ for w in plan.windows]}).encode("utf-8"))


def load_plan(settings: Settings, source_id: str) -> VideoPlan:
    check_source_id(source_id)
    try:
        data = json.loads(media_store(settings).get_bytes(_plan_key(source_id)))
    except NotFoundError:
        return VideoPlan(source_id=source_id, windows=[])
    return VideoPlan(source_id=data["source_id"], has_audio=data["has_audio"],
                     windows=[Window(**w) for w in data["windows"]])


def plan_video(settings: Settings, source: Path, source_id: str, append: bool = False) -> VideoPlan:
    """Probes `source` (clear errors for bad input) and fixes its clip windows.

    With `append`, the file continues the video's timeline (live mode: each new file of a stream becomes the
    next clips); re-planning a file that is already in the plan changes nothing.
    """
    from m3graph.ingest.video import plan_clips, probe, resolved_source

    check_source_id(source_id)  # before any file is written: the id names the plan's path
    resolved = resolved_source(source)
    existing = load_plan(settings, source_id) if append else VideoPlan(source_id=source_id, windows=[])
    if any(w.source == resolved for w in existing.windows):
        return existing
    info = probe(source, settings)
    first, offset = len(existing.windows), existing.duration_s
    source_key = None
    if not media_store(settings).is_local:  # workers on other hosts cut from the store's copy
        source_key = f"videos/{source_id}/inputs/{first:05d}{Path(resolved).suffix.lower()[:8]}"
        media_store(settings).put_file(source_key, Path(resolved))
    added = [Window(index=first + w.index, start_s=offset + w.start_s, end_s=offset + w.end_s, source=resolved,
                    source_start_s=w.start_s, source_key=source_key)
             for w in plan_clips(info.duration_s, settings.clip_seconds)]
    plan = VideoPlan(source_id=source_id, windows=existing.windows + added,
                     has_audio=existing.has_audio if existing.windows else info.has_audio)
    save_plan(settings, plan)
    return plan


def cut_stage(settings: Settings, plan: VideoPlan, index: int) -> ClipWork:
    from m3graph.ingest.video import ClipWindow, cut_clip, extract_audio

    work = ClipWork(settings, plan.source_id, index)
    w = plan.window(index)
    store = media_store(settings)
    work.clip.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(work.cut_lock):  # two submissions of one video may cut the same clip at once
        if not store.is_local and store.exists(work.clip_key):  # cut before, perhaps on another host
            return work
        source = Path(w.source)
        if not source.is_file() and w.source_key is not None:
            source = fetch(settings, w.source_key)
        cut_clip(source, ClipWindow(index=index, start_s=w.source_start_s,
                                    end_s=w.source_start_s + (w.end_s - w.start_s)), work.clip)
        if not work.audio.exists():
            work.audio.parent.mkdir(parents=True, exist_ok=True)
            extract_audio(work.clip, work.audio)  # None (no file) when the clip has no audio track
        if work.audio.exists():
            publish(settings, work.audio_key)
        publish(settings, work.clip_key)  # last: a stored cut means its audio is stored too
    return work


def _widths(vectors: Iterable[Sequence[float]]) -> set[int]:
    """The vector sizes in a cached perception result. A cache written under another embedder (the speaker
    embedder's default changed to CAM++, 192-d, from Resemblyzer, 256-d) must not feed old vectors into the new
    index: a width other than the configured one makes the stage perceive the clip again."""
    return {len(v) for v in vectors}


def faces_stage(settings: Settings, plan: VideoPlan, index: int) -> list[FaceCluster]:
    from m3graph.ingest.video import sample_frames
    from m3graph.perception.faces import perceive_faces

    work = ClipWork(settings, plan.source_id, index)
    if (raw := stored_bytes(settings, work.faces_key)) is not None:
        cached = keyed_faces(settings, _FACES.validate_json(raw))
        if _widths(o.embedding for c in cached for o in c.observations) <= {settings.identity.face_dim}:
            return cached
        log.info("clip %s#%d: cached faces come from another face model; perceiving again", plan.source_id, index)
    frames = sample_frames(fetch(settings, work.clip_key), settings.fps, settings)
    clusters = keyed_faces(settings, perceive_faces(frames, settings, work.crops, plan.window(index).start_s))
    publish_folder(settings, (o.crop_uri for c in clusters for o in c.observations), work.crops)
    media_store(settings).put_bytes(work.faces_key, _FACES.dump_json(clusters))
    return clusters


def voices_stage(settings: Settings, plan: VideoPlan, index: int) -> list[VoiceCluster]:
    from m3graph.perception.voices import perceive_voices

    work = ClipWork(settings, plan.source_id, index)
    if (raw := stored_bytes(settings, work.voices_key)) is not None:
        cached = keyed_voices(settings, _VOICES.validate_json(raw))
        if _widths(u.embedding for c in cached for u in c.utterances) <= {settings.identity.voice_dim}:
            return cached
        log.info("clip %s#%d: cached voices come from another speaker model; perceiving again", plan.source_id, index)
    start = plan.window(index).start_s
    audio = scratch_copy(settings, work.audio_key)
    clusters = keyed_voices(settings, perceive_voices(audio, settings, start, work.snippets) if audio else [])
    publish_folder(settings, (u.audio_uri for c in clusters for u in c.utterances), work.snippets)
    media_store(settings).put_bytes(work.voices_key, _VOICES.dump_json(clusters))
    return clusters


@dataclass(frozen=True)
class ClipReport:
    source_id: str
    clip_index: int
    faces: list[int]
    voices: list[int]
    new_entities: int
    memories: int
    memorize_error: str | None = None  # set when the clip ended memorize_failed (its old memories were kept)


class MemorizeFailedError(M3GraphError):
    """Memorizing clips failed; their previous memories were kept and they are marked memorize_failed."""


@dataclass(frozen=True)
class Resolved:
    """What the resolve step decided for one clip: cluster label → entity id, and how many entities are new."""

    face_ids: dict[int, int]
    voice_ids: dict[int, int]
    created: int = 0


def _record_failure(graph: MemoryGraph, source_id: str, index: int, state: ClipState, reason: str) -> None:
    """Best effort: the failure itself is what the caller raises; a second error must not hide it."""
    try:
        graph.set_clip_state(source_id, index, state, reason[:2000])
    except Exception:  # noqa: BLE001 - the database may be the thing that failed
        log.warning("could not record %s of %s#%d", state.value, source_id, index, exc_info=True)


def resolve_clip(graph: MemoryGraph, plan: VideoPlan, index: int) -> Resolved:
    """The ordered step: clip, identities and meta-clip vote in one transaction, state `resolved` with them.

    Must run in clip order per video (the ids it allocates are the `<face_N>` tags later clips see). A failure
    leaves the graph as it was and marks the clip `resolve_failed` with the reason.
    """
    faces = load_faces(graph.settings, plan.source_id, index)
    voices = load_voices(graph.settings, plan.source_id, index)
    clip = clip_infos(graph.settings, plan, [index])[0]
    try:
        face_res, voice_res = graph.resolve_clip(clip, faces, voices, video_name=plan.source_id)
    except Exception as exc:
        _record_failure(graph, plan.source_id, index, ClipState.RESOLVE_FAILED, f"{type(exc).__name__}: {exc}")
        raise
    return Resolved({r.label: r.entity_id for r in face_res}, {r.label: r.entity_id for r in voice_res},
                    sum(r.created for r in [*face_res, *voice_res]))


def _store_output(work: ClipWork, memorizer: Memorizer, memo: Memorization, resolved: Resolved) -> None:
    media_store(work.settings).put_bytes(work.memory_key, json.dumps({
        "memorizer": memorizer.name, "outcome": memo.outcome, "episodic": memo.episodic,
        "semantic": memo.semantic, "raw": memo.raw, "attempts": memo.attempts, "dropped": memo.dropped,
        "notes": memo.notes, "usage": {"prompt_tokens": memo.usage.prompt_tokens,
                                       "completion_tokens": memo.usage.completion_tokens},
        "faces": resolved.face_ids, "voices": resolved.voice_ids}, ensure_ascii=False).encode("utf-8"))


def _embed(embedder: TextEmbedder, memo: Memorization) -> list[MemoryIn]:
    texts = [("episodic", t) for t in memo.episodic] + [("semantic", t) for t in memo.semantic]
    vectors = embedder.embed([t for _, t in texts])
    return [MemoryIn(kind=k, text=t, embedding=v.tolist())
            for (k, t), v in zip(texts, vectors, strict=True)]


def memorize_clip(graph: MemoryGraph, embedder: TextEmbedder, memorizer: Memorizer, plan: VideoPlan, index: int,
                  resolved: Resolved | None = None) -> ClipReport:
    """The order-free, replaceable step: the clip's memories and memory votes, state `memorized` with them.

    The model call runs outside any lock; only the write takes the video's memory lock (inside its
    transaction). When the model fails or gives no usable output, the clip keeps the memories it has and is
    marked `memorize_failed` with the reason; a clip with no memories yet gets the perception memorizer's lines
    when `llm.memorize_on_failure` is "perception". Nothing is ever deleted. A model that raised makes this
    raise `MemorizeFailedError` (after the state is recorded); a model that answered garbage does not.
    """
    settings = graph.settings
    work = ClipWork(settings, plan.source_id, index)
    if resolved is None:
        states = {p.clip_index: p for p in graph.clip_states(plan.source_id)}
        if index not in states or not states[index].resolved:
            raise NotFoundError(f"clip {plan.source_id}#{index} is not resolved yet; ingest it before memorizing")
        face_ids, voice_ids = graph.clip_identities(plan.source_id, index)
        resolved = Resolved(face_ids, voice_ids)
    faces = local_crops(settings, load_faces(settings, plan.source_id, index))
    voices = load_voices(settings, plan.source_id, index)
    w = plan.window(index)
    clip_path = scratch_copy(settings, work.clip_key) or work.clip
    perception = ClipPerception(
        source_id=plan.source_id, clip_index=index, start_s=w.start_s, end_s=w.end_s, clip_path=str(clip_path),
        faces=[(resolved.face_ids[c.label], c) for c in faces],
        voices=[(resolved.voice_ids[c.label], c) for c in voices])
    memo: Memorization | None = None
    cause: Exception | None = None
    try:
        memo = memorizer.memorize(perception)
        _store_output(work, memorizer, memo, resolved)
        failure = None if memo.outcome != "fallback" else "the memorization model gave no usable output"
    except Exception as exc:  # noqa: BLE001 - any model failure is recorded on the clip, then raised
        cause, failure = exc, f"{type(exc).__name__}: {exc}"
    written = 0
    if failure is None:
        assert memo is not None
        try:
            memories = _embed(embedder, memo)
            graph.write_memorization(plan.source_id, index, memories, ClipState.MEMORIZED)
        except Exception as exc:  # the write is one transaction: nothing of it happened
            _record_failure(graph, plan.source_id, index, ClipState.MEMORIZE_FAILED,
                            f"{type(exc).__name__}: {exc}; previous memories kept")
            raise MemorizeFailedError(f"writing the memories of clip {plan.source_id}#{index} failed: "
                                      f"{type(exc).__name__}: {exc}; the clip is marked memorize_failed") from exc
        written = len(memories)
    else:
        log.warning("memorizing clip %s#%d failed: %s", plan.source_id, index, failure)
        kept = graph.clip_memory_ids(plan.source_id, index)
        if settings.llm.memorize_on_failure == "perception" and not kept:
            fallback = memo if memo is not None else PerceptionMemorizer(settings.perception).memorize(perception)
            memories = _embed(embedder, fallback)
            graph.write_memorization(plan.source_id, index, memories, ClipState.MEMORIZE_FAILED,
                                     f"{failure}; perception memories written"[:2000])
            written = len(memories)
        else:
            why = f"{failure}; {len(kept)} previous memories kept" if kept else f"{failure}; no memories written"
            _record_failure(graph, plan.source_id, index, ClipState.MEMORIZE_FAILED, why)
        if cause is not None:
            raise MemorizeFailedError(f"memorizing clip {plan.source_id}#{index} failed: {failure}; the clip is "
                                      f"marked memorize_failed (`m3graph memorize {plan.source_id} --failed` "
                                      "redoes it)") from cause
    return ClipReport(plan.source_id, index, sorted(resolved.face_ids.values()), sorted(resolved.voice_ids.values()),
                      resolved.created, written, failure)


def commit_clip(graph: MemoryGraph, embedder: TextEmbedder, memorizer: Memorizer, plan: VideoPlan,
                index: int) -> ClipReport:
    """Both steps of one clip back to back (in-process ingestion, tests): resolve, then memorize."""
    return memorize_clip(graph, embedder, memorizer, plan, index, resolve_clip(graph, plan, index))


Progress = Callable[[str, int, int, str], None]  # (video, clip index, clip count, stage)


def ingest_video_inprocess(graph: MemoryGraph, embedder: TextEmbedder, source: Path, source_id: str,
                           memorizer: Memorizer | None = None, progress: Progress | None = None,
                           append: bool = False) -> list[ClipReport]:
    """The whole workflow without a broker: faces and voices of a clip in parallel threads, clips in order."""
    settings = graph.settings
    memorizer = memorizer or PerceptionMemorizer(settings.perception)
    plan = plan_video(settings, source, source_id, append=append)  # refuses bad input before anything else
    resolved = str(source.resolve())
    reports = []
    indexes = [w.index for w in plan.windows if w.source == resolved]
    graph.plan_clips(clip_infos(settings, plan, indexes), video_name=source_id)
    failed: list[tuple[int, str]] = []
    for index in indexes:
        note = progress or (lambda *_: None)
        note(source_id, index, len(plan.windows), "cut")
        cut_stage(settings, plan, index)
        note(source_id, index, len(plan.windows), "perceive")
        with ThreadPoolExecutor(max_workers=2) as pool:
            f = pool.submit(faces_stage, settings, plan, index)
            v = pool.submit(voices_stage, settings, plan, index)
            f.result(), v.result()
        graph.mark_perceived(source_id, index)
        note(source_id, index, len(plan.windows), "resolve")
        done = resolve_clip(graph, plan, index)
        note(source_id, index, len(plan.windows), "memorize")
        try:
            reports.append(memorize_clip(graph, embedder, memorizer, plan, index, done))
        except MemorizeFailedError as exc:  # recorded on the clip; later clips still resolve and memorize
            cause = exc.__cause__ or exc
            failed.append((index, f"{type(cause).__name__}: {cause}"))
            continue
        note(source_id, index, len(plan.windows), "done")
    if failed:
        clips = ", ".join(str(i) for i, _ in failed)
        raise MemorizeFailedError(f"video {source_id}: memorizing clip(s) {clips} failed ({failed[0][1]}); previous "
                                  f"memories kept; `m3graph memorize {source_id} --failed` redoes them")
    return reports


def clip_infos(settings: Settings, plan: VideoPlan, indexes: list[int]) -> list[ClipInfo]:
    """The planned clips as the graph records them (the same properties resolve writes)."""
    out = []
    for i in indexes:
        w = plan.window(i)
        out.append(ClipInfo(source_id=plan.source_id, clip_index=i, start_s=w.start_s, end_s=w.end_s,
                            uri=ClipWork(settings, plan.source_id, i).clip_key))
    return out
