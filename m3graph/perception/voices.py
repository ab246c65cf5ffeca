"""Voices of one clip: who spoke when, and what they said, as per-clip `VoiceCluster`s.

The reference (m3-agent-reference §4.4) asks Gemini for speaker-turn segments with text, keeps those ≥ 2 s, embeds
each with ERes2NetV2 and matches every segment to the graph on its own (§10 item 9: no intra-clip clustering). Here,
all offline and per clip:

1. **VAD** (silero, `vad.py`): speech spans, tiny gaps bridged, spans < `min_speech_s` (0.8 s) dropped.
2. **Speaker turns.** VAD cannot see a speaker change without a pause, so a span of ≥ `TURN_SPLIT_MIN_S` is embedded
   in 1.6-s windows every 0.5 s and split where the mean embedding left of a boundary differs most from the mean
   right of it (cosine below `voice_cluster_threshold`), recursively, each side ≥ `MIN_TURN_S`; each cut is moved
   to the quietest 20-ms frame nearby so words are not cut, and kept only if the two pieces, embedded whole, are
   also below the threshold (the same test clustering applies, so a cut never separates what clustering would
   join). Spans without a change keep one embedding, the mean of their windows; split turns use their whole-piece
   embeddings. (Averaging fixed ~3-s windows without looking for changes would blend two voices into one vector
   whenever people talk without a pause.) With a short pause at the change the cut lands in it; with no pause at
   all it was up to 0.7 s off on espeak speech (the window embeddings cannot place it more finely).
   With `perception.overlap_detection`, the spans are first cut by pyannote segmentation-3.0 (`overlap.py`) at
   local speaker changes, overlap and silence; only single-speaker pieces of at least `min_speech_s` are searched
   and embedded as above, and the rest widens the neighbouring turn without touching its vector (`attach_rest`).
3. **ASR** (`asr.py`) per turn, with up to 0.2 s of context that does not reach into a neighbouring turn. Turns with
   no recognised text are dropped, like the reference's "skip unintelligible speech": this also removes VAD false
   alarms (music, noise) that would otherwise become voice entities.
4. **Clustering** within the clip: average-linkage agglomeration on cosine similarity, merging while the mean
   pairwise cosine is ≥ `voice_cluster_threshold`, with a cannot-link between turns that overlap in time (one
   person does not speak twice at once). Mean pairwise cosine is the same score the graph's identity matching uses.
   With `voice_turns = "pooled"`, a second stage (`merge_pooled`) then joins clusters whose pooled vectors (unit
   mean of all their members' 1.6-s windows) have cosine ≥ `voice_pooled_threshold` (0.80): single turns of one
   reader can score 0.70-0.79 with each other, pooled groups of 2-3 LibriSpeech utterances score ≥ 0.86 for one
   speaker and ≤ 0.77 for two (issue 10, docs/evaluation.md "Identity calibration").
5. **Output**: one `VoiceCluster` per speaker, labels 0.. in order of first speech; utterances carry ABSOLUTE times
   (`clip_start_s` + offset, ms precision), unit-norm embeddings, `quality` = turn duration in seconds (longer
   speech gives a steadier voice vector; it ranks voice exemplars), and, when `audio_dir` is given, a 16-bit WAV
   snippet named by its absolute milliseconds (deterministic: re-running a clip rewrites the same files; use one
   `audio_dir` per video).

Threshold: with Resemblyzer, `voice_cluster_threshold` should be 0.80. Measured on three espeak-ng voices, same-voice
cosines were ≥ 0.81 and different-voice cosines ≤ 0.80 (the two male voices 0.69-0.80); the settings default 0.75
separated them in the test clip only thanks to average linkage (0.74), and the paper's 0.6 (for ERes2NetV2) would
merge them outright.

`diarization = "pyannote"` replaces steps 1, 2 and 4 by a local pyannote pipeline (`diarize_pyannote.py`); embeddings
and ASR stay the same so the output is interchangeable.

Why this module is over 400 lines: VAD spans, speaker turns, their embeddings, both clustering stages and the ASR
alignment are one clip's pipeline and pass one set of turns between them; the models live in `vad.py`, `speaker.py`,
`campplus.py` and `asr.py`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from m3graph.errors import ConfigError, InvalidInputError
from m3graph.observations import UtteranceObservation, VoiceCluster
from m3graph.perception.asr import ASR, asr_model
from m3graph.perception.speaker import SpeakerEmbedder, speaker_embedder, unit
from m3graph.perception.vad import SAMPLE_RATE, SpeechSegment, detect_speech, load_audio, merge_segments
from m3graph.settings import Settings

log = logging.getLogger(__name__)

# Speaker-change search. Turns shorter than MIN_TURN_S are not cut off: with one or two 1.6-s windows on a side,
# same-voice boundary scores fell to 0.70 (2.0 s: ≥ 0.77) on espeak speech. Spans under TURN_SPLIT_MIN_S are
# never searched. A hop finer than 0.5 s did not locate changes better and doubles the window cost.
MIN_TURN_S = 2.0
TURN_SPLIT_MIN_S = 4.0
WINDOW_HOP_S = 0.5
SNAP_RADIUS_S = 0.5  # a cut moves to the quietest 20-ms frame within this distance
ASR_CONTEXT_S = 0.2
OVERLAP_EPS_S = 1e-3
# voice_turns = "pooled": turns of at least ANCHOR_MIN_S decide the speakers; a shorter turn joins the closest one
# when its mean cosine is within SHORT_TURN_SLACK of the clustering threshold.
ANCHOR_MIN_S = 2.0
SHORT_TURN_SLACK = 0.1


@dataclass(frozen=True)
class _Turn:
    """A clip-relative speech turn with its voice vector; `group` is a diarizer label (pyannote) or None."""

    start_s: float
    end_s: float
    embedding: np.ndarray
    group: str | None = None
    text: str = ""
    windows: np.ndarray | None = None  # the turn's unit 1.6-s window vectors ("pooled" turns), for `merge_pooled`
    # The span the vector was computed from, when `attach_rest` widened the turn over audio never embedded
    # (overlapped speech, short bits); None: the whole turn. The voice snippet holds this span only.
    voiced: tuple[float, float] | None = None


# ------------------------------------------------------------------------------------------ pure helpers


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def _quietest(audio: np.ndarray, t: float, lo: float, hi: float) -> float:
    """The centre of the lowest-energy 20-ms frame within SNAP_RADIUS_S of t, kept inside [lo, hi]."""
    frame = SAMPLE_RATE // 50
    a = max(lo, t - SNAP_RADIUS_S)
    b = min(hi, t + SNAP_RADIUS_S)
    i0, i1 = int(a * SAMPLE_RATE), int(b * SAMPLE_RATE)
    if i1 - i0 < 2 * frame:
        return t
    chunk = audio[i0:i1]
    n = chunk.size // frame
    energy = np.square(chunk[: n * frame].reshape(n, frame), dtype=np.float64).mean(axis=1)
    return float(a + (int(np.argmin(energy)) + 0.5) * frame / SAMPLE_RATE)


def find_turns(vectors: np.ndarray, spans: np.ndarray, start: float, end: float, threshold: float,
               min_turn_s: float, audio: np.ndarray | None = None,
               verify: Callable[[float, float, float], bool] | None = None) -> list[tuple[float, float]]:
    """Split [start, end] at speaker changes, given window vectors and their spans (same time base).

    A boundary t is scored by the cosine between the mean of the windows that end before t and the mean of those
    that start after it; the lowest score below `threshold` wins and both sides are searched again. Windows that
    straddle t are ignored, so each side's mean comes from one voice only. With `audio` (same time base, 16 kHz),
    a cut is moved to the quietest nearby frame. `verify(start, cut, end)` may veto a cut: window means are noisy
    near the edges (same-voice boundary scores went down to 0.70 on espeak speech), whole-piece embeddings are not.
    """
    eps = 1e-6
    inside = [i for i in range(len(spans)) if spans[i, 0] >= start - eps and spans[i, 1] <= end + eps]
    best: tuple[float, float] | None = None
    for t in sorted({float(spans[i, 0]) for i in inside} | {float(spans[i, 1]) for i in inside}):
        if t - start < min_turn_s or end - t < min_turn_s:
            continue
        left = [i for i in inside if spans[i, 1] <= t + eps]
        right = [i for i in inside if spans[i, 0] >= t - eps]
        if not left or not right:
            continue
        score = _cos(vectors[left].mean(axis=0), vectors[right].mean(axis=0))
        if best is None or score < best[0]:
            best = (score, t)
    if best is None or best[0] >= threshold:
        return [(start, end)]
    cut = best[1]
    if audio is not None:
        cut = _quietest(audio, cut, start + min_turn_s / 2, end - min_turn_s / 2)
    if verify is not None and not verify(start, cut, end):
        return [(start, end)]
    return (find_turns(vectors, spans, start, cut, threshold, min_turn_s, audio, verify)
            + find_turns(vectors, spans, cut, end, threshold, min_turn_s, audio, verify))


def cluster_voices(vectors: np.ndarray, spans: Sequence[tuple[float, float]], threshold: float) -> list[int]:
    """Average-linkage clustering with cannot-links for overlapping spans; labels 0.. in order of first start.

    Deterministic: among equal scores the first pair (in input order) merges first.
    """
    n = len(spans)
    if n == 0:
        return []
    sim = np.asarray(vectors, dtype=np.float64) @ np.asarray(vectors, dtype=np.float64).T
    starts = np.array([s for s, _ in spans])
    ends = np.array([e for _, e in spans])
    overlap = (np.minimum.outer(ends, ends) - np.maximum.outer(starts, starts)) > OVERLAP_EPS_S
    np.fill_diagonal(overlap, False)
    return _merge_greedy([[i] for i in range(n)], overlap, threshold,
                         lambda ga, gb: float(sim[np.ix_(ga, gb)].mean()),
                         lambda i: (starts[i], ends[i], i))


def _merge_greedy(groups: list[list[int]], overlap: np.ndarray, threshold: float,
                  score: Callable[[list[int], list[int]], float],
                  order: Callable[[int], tuple[float, ...]]) -> list[int]:
    """Joins the best-scoring pair of groups (score ≥ threshold, no overlapping members) until none is left.

    Ties go to the first pair in list order, so the result is deterministic; labels are numbered by each group's
    first member under `order`. Both voice clustering stages (per-turn average linkage, pooled centroids) use it.
    """
    groups = [list(g) for g in groups]
    while True:
        best: tuple[float, int, int] | None = None
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                if overlap[np.ix_(groups[a], groups[b])].any():
                    continue
                value = score(groups[a], groups[b])
                if value >= threshold and (best is None or value > best[0]):
                    best = (value, a, b)
        if best is None:
            break
        _, a, b = best
        groups[a] = sorted(groups[a] + groups[b])
        del groups[b]
    groups.sort(key=lambda members: min(order(i) for i in members))
    labels = [0] * sum(len(g) for g in groups)
    for label, members in enumerate(groups):
        for i in members:
            labels[i] = label
    return labels


# ------------------------------------------------------------------------------------------ pipeline stages


def _segment_turns(wave: np.ndarray, embedder: SpeakerEmbedder, threshold: float,
                   min_turn_s: float) -> list[tuple[float, float, np.ndarray]]:
    """Speaker turns of one long VAD span (times relative to `wave`), each with its voice vector."""
    cache: dict[tuple[float, float], np.ndarray] = {}

    def piece(a: float, b: float) -> np.ndarray:
        if (a, b) not in cache:
            cache[(a, b)] = embedder.embed(wave[int(round(a * SAMPLE_RATE)) : int(round(b * SAMPLE_RATE))],
                                           SAMPLE_RATE)
        return cache[(a, b)]

    def different(a: float, cut: float, b: float) -> bool:
        return float(np.dot(piece(a, cut), piece(cut, b))) < threshold

    vectors, spans = embedder.embed_windows(wave, SAMPLE_RATE, WINDOW_HOP_S)
    duration = wave.size / SAMPLE_RATE
    pieces = find_turns(vectors, spans, 0.0, duration, threshold, min_turn_s, wave, different)
    if len(pieces) == 1:
        return [(0.0, duration, unit(vectors.mean(axis=0)))]
    return [(a, b, piece(a, b)) for a, b in pieces]


def _embedding_turns(audio: np.ndarray, segments: list[SpeechSegment], embedder: SpeakerEmbedder,
                     threshold: float, min_speech_s: float) -> list[_Turn]:
    turns: list[_Turn] = []
    min_turn_s = max(MIN_TURN_S, embedder.window_s, min_speech_s)
    for seg in segments:
        wave = audio[int(round(seg.start_s * SAMPLE_RATE)) : int(round(seg.end_s * SAMPLE_RATE))]
        if seg.duration_s < max(TURN_SPLIT_MIN_S, 2 * min_turn_s):
            turns.append(_Turn(seg.start_s, seg.end_s, embedder.embed(wave, SAMPLE_RATE)))
            continue
        pieces = _segment_turns(wave, embedder, threshold, min_turn_s)
        if len(pieces) > 1:
            log.debug("split %.2f-%.2f s into %d speaker turns", seg.start_s, seg.end_s, len(pieces))
        last = len(pieces) - 1
        turns.extend(_Turn(seg.start_s + a, seg.end_s if k == last else seg.start_s + b, vec)
                     for k, (a, b, vec) in enumerate(pieces))
    return turns


def join_pauses(segments: list[SpeechSegment], max_gap_s: float) -> list[SpeechSegment]:
    """Join VAD spans separated by pauses shorter than `max_gap_s` into one turn.

    Conversational speech pauses mid-sentence for 0.3-1 s; cut there, one person's sentence became two short
    turns whose voice vectors disagree (a 1.6-s Resemblyzer window on 1 s of speech is mostly padding). Joined,
    the turn is long enough to embed, and a speaker change inside it is still found by `find_turns`.
    """
    return merge_segments(segments, max_gap_s, 0.0)


def pooled_embedding(embedder: SpeakerEmbedder, wave: np.ndarray) -> np.ndarray:
    """Unit mean of the turn's 1.6-s windows (hop `WINDOW_HOP_S`): every part of the turn weighs the same."""
    vectors, _ = embedder.embed_windows(wave, SAMPLE_RATE, WINDOW_HOP_S)
    return unit(vectors.mean(axis=0))


def _pooled_turns(audio: np.ndarray, segments: list[SpeechSegment], embedder: SpeakerEmbedder,
                  threshold: float, min_speech_s: float, gap_s: float) -> list[_Turn]:
    """Turns that survive short pauses, each embedded as the mean of its sliding windows (kept for merging)."""
    joined = join_pauses(segments, gap_s)
    return _with_windows(audio, _embedding_turns(audio, joined, embedder, threshold, min_speech_s), embedder)


def _with_windows(audio: np.ndarray, turns: list[_Turn], embedder: SpeakerEmbedder) -> list[_Turn]:
    """Each turn re-embedded as the unit mean of its 1.6-s windows, which are kept for `merge_pooled`."""
    out = []
    for t in turns:
        wave = audio[int(round(t.start_s * SAMPLE_RATE)) : int(round(t.end_s * SAMPLE_RATE))]
        windows, _ = embedder.embed_windows(wave, SAMPLE_RATE, WINDOW_HOP_S)
        out.append(_Turn(t.start_s, t.end_s, unit(windows.mean(axis=0)), windows=windows))
    return out


def cluster_anchored(vectors: np.ndarray, spans: Sequence[tuple[float, float]], threshold: float,
                     min_anchor_s: float = ANCHOR_MIN_S) -> list[int]:
    """Cluster the long turns, then give each short turn to the speaker whose turns it resembles most.

    A turn under `min_anchor_s` has one or two windows of speech, too noisy to found a speaker of its own (on AMI,
    short turns of one speaker scored as low as strangers); average linkage over the long turns decides who the
    speakers are, and a short turn joins the cluster with the highest mean cosine when that is at least
    `threshold - SHORT_TURN_SLACK`, else it stays alone. Labels 0.. in order of first start, like `cluster_voices`.
    """
    n = len(spans)
    if n == 0:
        return []
    v = np.asarray(vectors, dtype=np.float64)
    long_idx = [i for i, (a, b) in enumerate(spans) if b - a >= min_anchor_s]
    if not long_idx:
        return cluster_voices(v, spans, threshold)
    base = cluster_voices(v[long_idx], [spans[i] for i in long_idx], threshold)
    groups: dict[int, list[int]] = {}
    for i, label in zip(long_idx, base, strict=True):
        groups.setdefault(label, []).append(i)
    members = list(groups.values())
    for i in range(n):
        if i in long_idx:
            continue
        scores = [float((v[m] @ v[i]).mean()) for m in members]
        k = int(np.argmax(scores))
        if scores[k] >= threshold - SHORT_TURN_SLACK:
            members[k].append(i)
        else:
            members.append([i])
    starts = [a for a, _ in spans]
    members.sort(key=lambda m: min((starts[i], i) for i in m))
    labels = [0] * n
    for label, m in enumerate(members):
        for i in m:
            labels[i] = label
    return labels


def merge_pooled(labels: Sequence[int], vectors: np.ndarray, spans: Sequence[tuple[float, float]], threshold: float,
                 windows: Sequence[np.ndarray] | None = None) -> list[int]:
    """Second stage: join a clip's clusters while their pooled voice vectors agree (cosine ≥ `threshold`).

    A cluster's pooled vector is the unit mean of all its members' 1.6-s window vectors (`windows`, one array per
    turn), i.e. every second of its speech weighs the same; without windows, the duration-weighted mean of the turn
    vectors. Pooling several turns averages out what varies from utterance to utterance, so a reader whose single
    utterances score 0.70-0.79 with each other (below the per-turn threshold) has cluster vectors above it, while a
    different speaker's stay below (see docs/evaluation.md). Centroid linkage, the pair with the highest cosine
    first, centroids recomputed after each merge; never across overlapping turns. Labels 0.. in order of first start.
    """
    n = len(labels)
    if n == 0:
        return []
    members: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        members.setdefault(int(label), []).append(i)
    groups = list(members.values())
    v = np.asarray(vectors, dtype=np.float64)
    if windows is not None:
        sums = [np.asarray(w, dtype=np.float64).sum(axis=0) for w in windows]
    else:
        sums = [v[i] * max(b - a, 1e-3) for i, (a, b) in enumerate(spans)]
    starts = np.array([a for a, _ in spans])
    ends = np.array([b for _, b in spans])
    overlap = (np.minimum.outer(ends, ends) - np.maximum.outer(starts, starts)) > OVERLAP_EPS_S
    np.fill_diagonal(overlap, False)

    def pooled(group: list[int]) -> np.ndarray:
        total = np.sum([sums[i] for i in group], axis=0)
        return total / np.linalg.norm(total)

    return _merge_greedy(groups, overlap, threshold, lambda ga, gb: float(pooled(ga) @ pooled(gb)),
                         lambda i: (starts[i], i))


def _pyannote_turns(audio: np.ndarray, settings: Settings, embedder: SpeakerEmbedder) -> list[_Turn]:
    from m3graph.perception.diarize_pyannote import diarize

    turns = []
    for t in diarize(audio, settings.perception):
        wave = audio[int(round(t.start_s * SAMPLE_RATE)) : int(round(t.end_s * SAMPLE_RATE))]
        turns.append(_Turn(t.start_s, t.end_s, embedder.embed(wave, SAMPLE_RATE), group=t.speaker))
    return turns


def _transcribe(audio: np.ndarray, turns: list[_Turn], asr: ASR) -> list[_Turn]:
    """ASR per turn, with a little context that never reaches into the neighbouring turn."""
    out = []
    ordered = sorted(turns, key=lambda t: (t.start_s, t.end_s))
    duration = audio.size / SAMPLE_RATE
    for k, t in enumerate(ordered):
        prev_end = ordered[k - 1].end_s if k > 0 else 0.0
        next_start = ordered[k + 1].start_s if k + 1 < len(ordered) else duration
        a = max(0.0, min(t.start_s, max(t.start_s - ASR_CONTEXT_S, prev_end)))
        b = min(duration, max(t.end_s, min(t.end_s + ASR_CONTEXT_S, next_start)))
        text = asr.transcribe(audio[int(round(a * SAMPLE_RATE)) : int(round(b * SAMPLE_RATE))], SAMPLE_RATE)
        out.append(replace(t, text=text))
    return out


def _write_snippet(audio: np.ndarray, start_s: float, end_s: float, abs_start: float, abs_end: float,
                   audio_dir: Path) -> str:
    """Write the turn's voiced audio atomically under a name derived from its absolute time; returns a file:// URI.

    The snippet is the voice evidence: exactly the audio the turn's vector came from (`_Turn.voiced`), so
    `m3graph reembed --kind voice` reproduces the vector, and overlapped speech attached to the turn never enters a
    re-embedded one either. The utterance's times and text cover the whole turn."""
    import soundfile as sf

    audio_dir.mkdir(parents=True, exist_ok=True)
    path = audio_dir / f"voice_{round(abs_start * 1000):09d}_{round(abs_end * 1000):09d}.wav"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    sf.write(str(tmp), audio[int(round(start_s * SAMPLE_RATE)) : int(round(end_s * SAMPLE_RATE))], SAMPLE_RATE,
             subtype="PCM_16", format="WAV")
    os.replace(tmp, path)
    return path.resolve().as_uri()


def attach_rest(turns: list[_Turn], rest: Sequence[tuple[float, float]]) -> list[_Turn]:
    """Give each never-embedded piece (overlap, silence, a short single-speaker bit) to the turn that ends where it
    starts, else to the turn that starts where it ends; a piece with neither neighbour is dropped.

    The piece only widens that turn's time span (so its words are transcribed and kept); the turn's voice vector
    stays the one of its single-speaker audio, so overlapped speech never pulls a cluster. The preceding turn goes
    first: the speaker who holds the floor when an overlap begins is usually the one talked over, and their
    sentence runs on through it."""
    eps = 1e-3
    spans = [[t.start_s, t.end_s] for t in turns]
    pending = sorted(rest)
    progress = True
    while pending and progress:  # a piece next to a piece that has just been attached attaches in the next pass
        progress = False
        for piece in list(pending):
            a, b = piece
            before = [k for k, (_, e) in enumerate(spans) if abs(e - a) < eps]
            after = [k for k, (s0, _) in enumerate(spans) if abs(s0 - b) < eps]
            if before:
                spans[before[0]][1] = b
            elif after:
                spans[after[0]][0] = a
            else:
                continue
            pending.remove(piece)
            progress = True
    return [t if (s0, e) == (t.start_s, t.end_s)
            else replace(t, start_s=s0, end_s=e, voiced=t.voiced or (t.start_s, t.end_s))
            for t, (s0, e) in zip(turns, spans, strict=True)]


def _overlap_aware_turns(audio: np.ndarray, segments: list[SpeechSegment], settings: Settings,
                         embedder: SpeakerEmbedder) -> list[_Turn]:
    """`perception.overlap_detection`: the VAD spans (joined over pauses for "pooled") are cut by the segmentation
    model into single-speaker pieces of at least `min_speech_s`, which go through the usual turn search and
    embedding; overlapped and other unembedded time is then attached to a neighbouring turn (`attach_rest`)."""
    from m3graph.perception.overlap import segmenter, split_span

    cfg = settings.perception
    if not segments:
        return []  # nobody speaks: the segmentation model is not even loaded
    pooled = cfg.voice_turns != "legacy"
    spans = join_pauses(segments, cfg.voice_turn_gap_s) if pooled else segments
    marks = segmenter(cfg.campplus_dir, cfg.threads).stretches(audio)
    solo: list[SpeechSegment] = []
    rest: list[tuple[float, float]] = []
    for seg in spans:
        pieces, other = split_span(seg.start_s, seg.end_s, marks, cfg.min_speech_s)
        solo.extend(SpeechSegment(a, b) for a, b in pieces)
        rest.extend(other)
    turns = _embedding_turns(audio, solo, embedder, cfg.voice_cluster_threshold, cfg.min_speech_s)
    if pooled:
        turns = _with_windows(audio, turns, embedder)
    return attach_rest(turns, rest)


def speech_turns(audio: np.ndarray, settings: Settings, embedder: SpeakerEmbedder) -> list[_Turn]:
    """VAD, then speaker turns with voice vectors, by `perception.voice_turns` ("legacy": today's path before
    issue 10, kept for the benchmark) and `perception.overlap_detection`."""
    cfg = settings.perception
    segments = detect_speech(audio, cfg)
    if cfg.overlap_detection:
        return _overlap_aware_turns(audio, segments, settings, embedder)
    if cfg.voice_turns == "legacy":
        return _embedding_turns(audio, segments, embedder, cfg.voice_cluster_threshold, cfg.min_speech_s)
    return _pooled_turns(audio, segments, embedder, cfg.voice_cluster_threshold, cfg.min_speech_s,
                         cfg.voice_turn_gap_s)


def cluster_turns(vectors: np.ndarray, spans: Sequence[tuple[float, float]], settings: Settings,
                  windows: Sequence[np.ndarray] | None = None) -> list[int]:
    """Within-clip speaker labels for turns, by `perception.voice_turns`; "pooled" then joins clusters whose pooled
    vectors agree at `perception.voice_pooled_threshold` (None: no second stage), see `merge_pooled`."""
    cfg = settings.perception
    if cfg.voice_turns == "legacy":
        return cluster_voices(vectors, spans, cfg.voice_cluster_threshold)
    labels = cluster_anchored(vectors, spans, cfg.voice_cluster_threshold)
    if cfg.voice_pooled_threshold is None:
        return labels
    return merge_pooled(labels, vectors, spans, cfg.voice_pooled_threshold, windows)


def perceive_voices(wav_path: Path, settings: Settings, clip_start_s: float = 0.0, audio_dir: Path | None = None,
                    *, embedder: SpeakerEmbedder | None = None, asr: ASR | None = None,
                    keep_untranscribed: bool = False) -> list[VoiceCluster]:
    """Per-clip voice clusters of a clip's audio track (any sample rate/channels; resampled to 16 kHz mono).

    Args:
        wav_path: the clip's audio.
        settings: `settings.perception` drives every stage; `settings.identity.voice_dim` must match the embedder.
        clip_start_s: the clip's start in the video; added to every timestamp.
        audio_dir: where to write per-utterance WAV snippets (None: write nothing, `audio_uri` stays None).
        embedder, asr: override the configured models (tests, other back ends).
        keep_untranscribed: keep turns whose ASR text is empty (default: drop them, see module docstring).

    Returns:
        One cluster per speaker, or [] when nobody speaks.

    Raises:
        FileNotFoundError / InvalidInputError: unreadable audio or a negative `clip_start_s`.
        ConfigError: a model, package or path that the settings name is unavailable.
    """
    if not clip_start_s >= 0:
        raise InvalidInputError(f"clip_start_s must be >= 0, got {clip_start_s}")
    cfg = settings.perception
    audio = load_audio(Path(wav_path))
    if embedder is None:
        embedder = speaker_embedder(cfg.speaker_embedder, cfg.threads, cfg.campplus_dir)
    if embedder.dim != settings.identity.voice_dim:
        raise ConfigError(f"speaker embedder {cfg.speaker_embedder!r} produces {embedder.dim}-d vectors but "
                          f"identity.voice_dim is {settings.identity.voice_dim}")

    if cfg.diarization == "pyannote":
        turns = _pyannote_turns(audio, settings, embedder)
    else:
        turns = speech_turns(audio, settings, embedder)
    if not turns:
        return []
    turns = _transcribe(audio, turns, asr or asr_model(cfg.asr_model, cfg.asr_language, cfg.threads))
    if not keep_untranscribed:
        turns = [t for t in turns if t.text]
    if not turns:
        return []

    if cfg.diarization == "pyannote":
        first: dict[str | None, float] = {}
        for t in turns:
            first.setdefault(t.group, t.start_s)
        order = {g: k for k, g in enumerate(sorted(first, key=lambda g: (first[g], str(g))))}
        labels = [order[t.group] for t in turns]
    else:
        windows = [t.windows for t in turns if t.windows is not None]
        labels = cluster_turns(np.stack([t.embedding for t in turns]), [(t.start_s, t.end_s) for t in turns],
                               settings, windows if len(windows) == len(turns) else None)

    grouped: dict[int, list[UtteranceObservation]] = {}
    for label, t in sorted(zip(labels, turns, strict=True), key=lambda p: (p[0], p[1].start_s)):
        abs_start, abs_end = round(clip_start_s + t.start_s, 3), round(clip_start_s + t.end_s, 3)
        v0, v1 = t.voiced or (t.start_s, t.end_s)
        uri = None if audio_dir is None else _write_snippet(audio, v0, v1, abs_start, abs_end, Path(audio_dir))
        grouped.setdefault(label, []).append(UtteranceObservation(
            start_s=abs_start,
            end_s=abs_end,
            text=t.text,
            embedding=[float(x) for x in unit(t.embedding)],
            quality=round(t.end_s - t.start_s, 3),
            audio_uri=uri,
        ))
    return [VoiceCluster(label=label, utterances=utts) for label, utts in sorted(grouped.items())]
