"""Runs the configured embedders on the labelled identity media and scores them (`m3graph calibrate`).

The pure scoring lives in `calibrate.py`; this module loads photos and audio, runs MTCNN + the face embedder and
the voice pipeline, and compares the voice methods side by side in one run ("legacy": one vector per VAD turn,
turns clustered by average linkage; "pooled": turns joined over short pauses, window-mean vectors, long turns
anchor the clustering). Cross-clip matching joins per-clip speakers by their pooled exemplars (centroids).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from m3graph.perception.calibrate import (
    PR,
    Separation,
    SweepRow,
    Turn,
    ami_recordings,
    average_linkage,
    best_row,
    face_identities,
    frame_labels,
    librispeech_files,
    pair_scores,
    phone_call,
    score_frames,
    separation,
    sweep,
)
from m3graph.settings import PerceptionConfig, Settings

log = logging.getLogger(__name__)

FACE_SWEEP = np.round(np.arange(0.80, 0.981, 0.01), 3)
VOICE_SWEEP = np.round(np.arange(0.55, 0.901, 0.025), 3)
MIN_ORACLE_TURN_S = 1.0  # oracle (RTTM) turns shorter than this are left out of the pair distributions


@dataclass
class EmbedderReport:
    """Calibration of one embedder on one labelled set."""

    name: str
    dataset: str
    items: int
    identities: int
    separation: Separation
    sweep: list[SweepRow]
    skipped: list[str] = field(default_factory=list)

    @property
    def best(self) -> SweepRow:
        return best_row(self.sweep)


def calibrate_faces(faces_dir: Path, settings: Settings) -> EmbedderReport:
    """Largest MTCNN face of each labelled photo, embedded by the configured face embedder."""
    import cv2

    from m3graph.perception.face_embed import get_face_embedder
    from m3graph.perception.faces import detect_faces

    cfg = settings.perception
    embedder = get_face_embedder(cfg.face_embedder, cfg.threads)
    vectors, labels, skipped = [], [], []
    for path, identity in face_identities(faces_dir):
        bgr = cv2.imread(str(path))
        if bgr is None:
            skipped.append(f"{path.name}: unreadable")
            continue
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        dets = [d for d in detect_faces(rgb, cfg) if d.score >= cfg.face_min_det_score]
        if not dets:
            skipped.append(f"{path.name}: no face")
            continue
        det = max(dets, key=lambda d: (d.box[2] - d.box[0]) * (d.box[3] - d.box[1]))
        vecs, _ = embedder.embed(rgb, [det])
        vectors.append(vecs[0])
        labels.append(identity)
    v = np.stack(vectors)
    same, diff = pair_scores(v, labels)
    return EmbedderReport(embedder.name, "faces (photos)", len(labels), len(set(labels)), separation(same, diff),
                          sweep(v, labels, FACE_SWEEP), skipped)


def _embedder(settings: Settings):  # noqa: ANN202 - the SpeakerEmbedder protocol
    from m3graph.perception.speaker import speaker_embedder

    return speaker_embedder(settings.perception.speaker_embedder, settings.perception.threads)


def calibrate_librispeech(voices_dir: Path, settings: Settings, method: str = "utterance") -> EmbedderReport:
    """One vector per read utterance: the whole file ("utterance") or the mean of its 1.6-s windows ("pooled")."""
    from m3graph.perception.vad import SAMPLE_RATE, load_audio
    from m3graph.perception.voices import pooled_embedding

    emb = _embedder(settings)
    vectors, labels = [], []
    for path, speaker in librispeech_files(voices_dir):
        audio = load_audio(path)
        vectors.append(pooled_embedding(emb, audio) if method == "pooled" else emb.embed(audio, SAMPLE_RATE))
        labels.append(speaker)
    v = np.stack(vectors)
    same, diff = pair_scores(v, labels)
    return EmbedderReport(f"{settings.perception.speaker_embedder} ({method})", "LibriSpeech read speech",
                          len(labels), len(set(labels)), separation(same, diff), sweep(v, labels, VOICE_SWEEP))


def recordings(media_dir: Path) -> list[tuple[str, Path, list[Turn]]]:
    """The phone call and the AMI clips, named ("phone" or "ami"), with their labelled turns."""
    wav, turns = phone_call(media_dir)
    out = [("phone", wav, turns)]
    out.extend(("ami", w, t) for w, t in ami_recordings(media_dir))
    return out


def calibrate_oracle_turns(media_dir: Path, settings: Settings, dataset: str, method: str) -> EmbedderReport:
    """Pair distributions of labelled (RTTM) turns >= 1 s, one vector per turn, within each recording."""
    from m3graph.perception.vad import SAMPLE_RATE, load_audio
    from m3graph.perception.voices import pooled_embedding

    emb = _embedder(settings)
    same_all, diff_all, vectors, labels = [], [], [], []
    for name, wav, turns in recordings(media_dir):
        if name != dataset:
            continue
        audio = load_audio(wav)
        vecs, labs = [], []
        for t in turns:
            if t.end_s - t.start_s < MIN_ORACLE_TURN_S:
                continue
            piece = audio[int(t.start_s * SAMPLE_RATE) : int(t.end_s * SAMPLE_RATE)]
            vecs.append(pooled_embedding(emb, piece) if method == "pooled" else emb.embed(piece, SAMPLE_RATE))
            labs.append(t.speaker)
        if len(vecs) >= 2:
            same, diff = pair_scores(np.stack(vecs), labs)
            same_all.append(same)
            diff_all.append(diff)
        vectors.extend(vecs)
        labels.extend(f"{wav.stem}|{x}" if dataset == "phone" else x for x in labs)
    sep = separation(np.concatenate(same_all), np.concatenate(diff_all))
    return EmbedderReport(f"{settings.perception.speaker_embedder} ({method})", f"{dataset} labelled turns >= 1 s",
                          len(labels), len(set(labels)), sep, sweep(np.stack(vectors), labels, VOICE_SWEEP))


@dataclass(frozen=True)
class PipelineScore:
    """Voice identity of the pipeline's own turns against the labelled turns, scored on 0.1-s frames."""

    method: str
    dataset: str
    within: PR  # pairwise, frames of one recording (cross-recording pairs not counted)
    within_bcubed: PR
    across: PR  # pairwise over all recordings, per-clip speakers joined by their pooled exemplars
    across_bcubed: PR
    coverage: float  # share of labelled single-speaker frames that the pipeline assigned to a voice
    speakers_found: int
    speakers_true: int


def _pipeline_turns(audio: np.ndarray, settings: Settings) -> tuple[list[tuple[float, float]], np.ndarray, list[int]]:
    from m3graph.perception.voices import cluster_turns, speech_turns

    turns = speech_turns(audio, settings, _embedder(settings))
    if not turns:
        return [], np.empty((0, 0)), []
    spans = [(t.start_s, t.end_s) for t in turns]
    vectors = np.stack([t.embedding for t in turns])
    return spans, vectors, cluster_turns(vectors, spans, settings)


def score_pipeline(media_dir: Path, settings: Settings, dataset: str, identity_threshold: float) -> PipelineScore:
    """Run VAD + turns + clustering (no ASR) per recording; join clusters across recordings at the threshold."""
    from m3graph.perception.vad import SAMPLE_RATE, load_audio

    within_pred: list[object | None] = []
    within_true: list[object | None] = []
    centroids, cluster_keys, recs = [], [], []
    per_frame: list[tuple[int, list[object | None], list[object | None]]] = []
    for k, (name, wav, turns) in enumerate(recordings(media_dir)):
        if name != dataset:
            continue
        audio = load_audio(wav)
        duration = audio.size / SAMPLE_RATE
        truth = frame_labels([(t.start_s, t.end_s, t.speaker) for t in turns], duration)
        spans, vectors, labels = _pipeline_turns(audio, settings)
        pred = frame_labels([(a, b, (k, lab)) for (a, b), lab in zip(spans, labels, strict=True)], duration)
        within_pred.extend(pred)
        within_true.extend(None if t is None else (k, t) for t in truth)
        for lab in sorted(set(labels)):
            idx = [i for i, x in enumerate(labels) if x == lab]
            c = vectors[idx].mean(axis=0)
            centroids.append(c / np.linalg.norm(c))
            cluster_keys.append((k, lab))
            recs.append(k)
        per_frame.append((k, pred, truth))
    within_pw, within_b3, coverage = score_frames(within_pred, within_true)
    # Within-recording pairwise: a pair of frames from two recordings is never "together" in within_pred (labels
    # carry the recording), so pairwise precision is exact; recall counts only same-recording truth pairs because
    # true labels carry the recording too.
    global_of: dict[tuple[int, int], int] = {}
    if centroids:
        joined = average_linkage(np.stack(centroids), identity_threshold, groups=recs)
        global_of = {key: int(g) for key, g in zip(cluster_keys, joined, strict=True)}
    across_pred: list[object | None] = []
    across_true: list[object | None] = []
    for _k, pred, truth in per_frame:
        across_pred.extend(None if p is None else global_of[p] for p in pred)  # type: ignore[index]
        across_true.extend(truth)
    across_pw, across_b3, _ = score_frames(across_pred, across_true)
    true_speakers = {t for t in across_true if t is not None}
    return PipelineScore(settings.perception.voice_turns, dataset, within_pw, within_b3, across_pw, across_b3,
                         coverage, len(set(global_of.values())), len(true_speakers))


def with_perception(settings: Settings, **changes: object) -> Settings:
    """A copy of the settings with some perception fields changed (the benchmark's side-by-side variants)."""
    data = settings.perception.model_dump()
    data.update(changes)
    return settings.model_copy(update={"perception": PerceptionConfig(**data)})
