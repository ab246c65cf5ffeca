"""Runs the configured embedders on the labelled identity media and scores them (`m3graph calibrate`).

The pure scoring lives in `calibrate.py`; this module loads photos and audio, runs MTCNN + the face embedder and
the voice pipeline, and compares the voice methods side by side in one run ("legacy": one vector per VAD turn,
turns clustered by average linkage; "pooled": turns joined over short pauses, window-mean vectors, long turns
anchor the clustering). Cross-clip matching joins per-clip speakers by their pooled exemplars (centroids).
"""

from __future__ import annotations

import logging
import time
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
from m3graph.settings import VOICE_DIMS, IdentityConfig, PerceptionConfig, Settings

log = logging.getLogger(__name__)

FACE_SWEEP = np.round(np.arange(0.80, 0.981, 0.01), 3)
VOICE_SWEEP = np.round(np.arange(0.20, 0.901, 0.025), 3)  # CAM++'s thresholds sit near 0.4, Resemblyzer's near 0.8
MIN_ORACLE_TURN_S = 1.0  # oracle (RTTM) turns shorter than this are left out of the pair distributions

# Disjoint halves of the labelled voices, so thresholds are chosen on one and scored on the other
# (`m3graph calibrate voices --split choose|report`): LibriSpeech speakers by sorted id, AMI clips by sorted file
# name; the phone call (one recording) is only in "report".
SPLITS = ("all", "choose", "report")
LIBRISPEECH_CHOOSE = 5  # the first 5 of the 10 speakers
AMI_CHOOSE = 7  # AMI files 0-6; 7-14 report


def split_librispeech(files: list[tuple[Path, str]], split: str) -> list[tuple[Path, str]]:
    speakers = sorted({s for _, s in files})
    keep = set(speakers if split == "all" else speakers[:LIBRISPEECH_CHOOSE] if split == "choose"
               else speakers[LIBRISPEECH_CHOOSE:])
    return [(f, s) for f, s in files if s in keep]


def split_recordings(recs: list[tuple[str, Path, list[Turn]]], split: str) -> list[tuple[str, Path, list[Turn]]]:
    ami = [r for r in recs if r[0] == "ami"]
    if split == "all":
        return recs
    if split == "choose":
        return ami[:AMI_CHOOSE]
    return [r for r in recs if r[0] != "ami"] + ami[AMI_CHOOSE:]


def balanced_accuracy_at(same: np.ndarray, diff: np.ndarray, threshold: float) -> float:
    """Mean of the share of same pairs at or above `threshold` and different pairs below it."""
    return float(((same >= threshold).mean() + (diff < threshold).mean()) / 2)


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
    setting: float | None = None  # the identity threshold in force for this embedder
    accuracy_at_setting: float | None = None  # balanced accuracy of the pairs at that threshold
    embed_s: float = 0.0  # seconds spent embedding
    audio_s: float = 0.0  # seconds of audio embedded

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

    cfg = settings.perception
    return speaker_embedder(cfg.speaker_embedder, cfg.threads, cfg.campplus_dir)


class _Clock:
    """Embeds one piece by `method` and adds up the time and the audio length."""

    def __init__(self, settings: Settings, method: str) -> None:
        self.emb, self.method, self.seconds, self.audio_s = _embedder(settings), method, 0.0, 0.0

    def __call__(self, audio: np.ndarray) -> np.ndarray:
        from m3graph.perception.vad import SAMPLE_RATE
        from m3graph.perception.voices import pooled_embedding

        start = time.perf_counter()
        out = pooled_embedding(self.emb, audio) if self.method == "pooled" else self.emb.embed(audio, SAMPLE_RATE)
        self.seconds += time.perf_counter() - start
        self.audio_s += audio.size / SAMPLE_RATE
        return out


def _report(settings: Settings, method: str, dataset: str, vectors: np.ndarray, labels: list[str],
            same: np.ndarray, diff: np.ndarray, clock: _Clock) -> EmbedderReport:
    thr = settings.voice_match_threshold
    return EmbedderReport(f"{settings.perception.speaker_embedder} ({method})", dataset, len(labels),
                          len(set(labels)), separation(same, diff), sweep(vectors, labels, VOICE_SWEEP),
                          setting=thr, accuracy_at_setting=balanced_accuracy_at(same, diff, thr),
                          embed_s=clock.seconds, audio_s=clock.audio_s)


def calibrate_librispeech(voices_dir: Path, settings: Settings, method: str = "utterance",
                          split: str = "all") -> EmbedderReport:
    """One vector per read utterance: the whole file ("utterance") or the mean of its 1.6-s windows ("pooled")."""
    from m3graph.perception.vad import load_audio

    clock = _Clock(settings, method)
    vectors, labels = [], []
    for path, speaker in split_librispeech(librispeech_files(voices_dir), split):
        vectors.append(clock(load_audio(path)))
        labels.append(speaker)
    v = np.stack(vectors)
    same, diff = pair_scores(v, labels)
    name = "LibriSpeech read speech" + ("" if split == "all" else f" ({split})")
    return _report(settings, method, name, v, labels, same, diff, clock)


def recordings(media_dir: Path) -> list[tuple[str, Path, list[Turn]]]:
    """The phone call and the AMI clips, named ("phone" or "ami"), with their labelled turns."""
    wav, turns = phone_call(media_dir)
    out = [("phone", wav, turns)]
    out.extend(("ami", w, t) for w, t in ami_recordings(media_dir))
    return out


def solo_spans(turn: Turn, turns: list[Turn]) -> list[tuple[float, float]]:
    """The parts of `turn` during which no other labelled turn of the recording is running (overlap cut out)."""
    spans = [(turn.start_s, turn.end_s)]
    for other in turns:
        if other is turn or other.end_s <= turn.start_s or other.start_s >= turn.end_s:
            continue
        spans = [piece for a, b in spans for piece in ((a, min(b, other.start_s)), (max(a, other.end_s), b))
                 if piece[1] > piece[0]]
    return spans


def calibrate_oracle_turns(media_dir: Path, settings: Settings, dataset: str, method: str,
                           split: str = "all", cut_overlap: bool = False) -> EmbedderReport | None:
    """Pair distributions of labelled (RTTM) turns >= 1 s, one vector per turn, within each recording.

    `cut_overlap`: each turn's audio is only its time without another speaker (the pieces joined), still >= 1 s:
    what an embedder can do on one voice, apart from the overlap a diarizer would have to handle.
    None when the split holds no recording of `dataset` (the phone call is only in "report")."""
    from m3graph.perception.vad import SAMPLE_RATE, load_audio

    clock = _Clock(settings, method)
    same_all: list[np.ndarray] = []
    diff_all: list[np.ndarray] = []
    vectors: list[np.ndarray] = []
    labels: list[str] = []
    for name, wav, turns in split_recordings(recordings(media_dir), split):
        if name != dataset:
            continue
        audio = load_audio(wav)
        vecs, labs = [], []
        for t in turns:
            spans = solo_spans(t, turns) if cut_overlap else [(t.start_s, t.end_s)]
            if sum(b - a for a, b in spans) < MIN_ORACLE_TURN_S:
                continue
            vecs.append(clock(np.concatenate([audio[int(a * SAMPLE_RATE) : int(b * SAMPLE_RATE)] for a, b in spans])))
            labs.append(t.speaker)
        if len(vecs) >= 2:
            same, diff = pair_scores(np.stack(vecs), labs)
            same_all.append(same)
            diff_all.append(diff)
        vectors.extend(vecs)
        labels.extend(f"{wav.stem}|{x}" if dataset == "phone" else x for x in labs)
    if not same_all:
        return None
    name = (f"{dataset} labelled turns >= 1 s" + (", overlap cut out" if cut_overlap else "")
            + ("" if split == "all" else f" ({split})"))
    return _report(settings, method, name, np.stack(vectors), labels, np.concatenate(same_all),
                   np.concatenate(diff_all), clock)


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


def score_pipeline(media_dir: Path, settings: Settings, dataset: str, identity_threshold: float,
                   split: str = "all") -> PipelineScore:
    """Run VAD + turns + clustering (no ASR) per recording; join clusters across recordings at the threshold.

    `split` keeps the recordings of one half (split_recordings), so a threshold chosen on "choose" is scored on
    recordings it was not chosen on."""
    from m3graph.perception.vad import SAMPLE_RATE, load_audio

    within_pred: list[object | None] = []
    within_true: list[object | None] = []
    centroids, cluster_keys, recs = [], [], []
    per_frame: list[tuple[int, list[object | None], list[object | None]]] = []
    for k, (name, wav, turns) in enumerate(split_recordings(recordings(media_dir), split)):
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
    """A copy of the settings with some perception fields changed (the benchmark's side-by-side variants).

    Fields that were not set explicitly keep following the speaker embedder (voice thresholds, `voice_dim`)."""
    cfg = settings.perception
    perception = PerceptionConfig(**{**cfg.model_dump(include=cfg.model_fields_set), **changes})
    identity = settings.identity
    if "voice_dim" not in identity.model_fields_set:
        identity = IdentityConfig(**identity.model_dump(include=identity.model_fields_set),
                                  voice_dim=VOICE_DIMS.get(perception.speaker_embedder, identity.voice_dim))
        identity.model_fields_set.discard("voice_dim")
    return settings.model_copy(update={"perception": perception, "identity": identity})
