"""Voice activity detection: where in a clip somebody speaks.

The reference (m3-agent-reference §4.4) lets Gemini cut speech at 1-s resolution and drops segments under 2 s. Here
silero-vad (the ONNX model that ships inside the `silero-vad` wheel, so nothing is downloaded) finds the speech
spans to about 0.1 s, tiny pauses inside a sentence are bridged, and spans shorter than
`PerceptionConfig.min_speech_s` (0.8 s) are dropped: Resemblyzer embeddings are still usable from about that length,
while shorter blips are mostly breaths, clicks and one-word interjections that would only add noisy voice nodes.

The model is loaded on first use (never at import) and cached per process; a lock serialises calls because the
ONNX wrapper keeps recurrent state between chunks.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from math import gcd
from pathlib import Path
from typing import Any

import numpy as np

from m3graph.errors import ConfigError, InvalidInputError
from m3graph.settings import PerceptionConfig

SAMPLE_RATE = 16000  # every model of the voice pipeline (silero, Resemblyzer, Whisper) works at 16 kHz mono

# Silero knobs. 0.5 is silero's own default speech probability threshold; a 100-ms pause ends a span (silero's
# default), so a span also ends cleanly when speech stops just before the end of the file; 100 ms of padding keeps
# word onsets and final consonants, which Whisper needs more than the speaker embedder minds a bit of silence.
VAD_THRESHOLD = 0.5
MIN_SILENCE_MS = 100
SPEECH_PAD_MS = 100
# Spans closer than this (after padding) are one utterance: with the padding, pauses up to about 0.5 s inside a
# sentence are bridged. Longer silences separate turns; speaker changes without a pause are found by voices.py.
MERGE_GAP_S = 0.3


@dataclass(frozen=True, order=True)
class SpeechSegment:
    """A span of speech in seconds from the start of the audio (clip-relative, not absolute)."""

    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def to_mono_16k(samples: np.ndarray, sr: int) -> np.ndarray:
    """Down-mix to mono and resample to 16 kHz (polyphase), so callers may hand in any WAV they have."""
    audio = np.asarray(samples, dtype=np.float32)
    if audio.ndim == 2:
        audio = audio.mean(axis=1, dtype=np.float32)
    elif audio.ndim != 1:
        raise InvalidInputError(f"audio must be 1-D or (samples, channels), got shape {audio.shape}")
    if sr <= 0:
        raise InvalidInputError(f"sample rate must be positive, got {sr}")
    if sr != SAMPLE_RATE and audio.size:
        from scipy.signal import resample_poly

        g = gcd(sr, SAMPLE_RATE)
        audio = resample_poly(audio, SAMPLE_RATE // g, sr // g).astype(np.float32)
    if not np.all(np.isfinite(audio)):
        raise InvalidInputError("audio contains NaN or infinite samples")
    return np.ascontiguousarray(audio, dtype=np.float32)


def load_audio(path: Path) -> np.ndarray:
    """Read a WAV (or anything libsndfile reads) as float32 mono 16 kHz samples in [-1, 1].

    Raises:
        FileNotFoundError: the file does not exist.
        InvalidInputError: the file is not readable audio.
    """
    import soundfile as sf

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"audio file not found: {path}")
    try:
        samples, sr = sf.read(str(path), dtype="float32", always_2d=False)
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        raise InvalidInputError(f"cannot read audio {path}: {exc}") from exc
    return to_mono_16k(samples, int(sr))


def merge_segments(segments: list[SpeechSegment], max_gap_s: float, min_duration_s: float) -> list[SpeechSegment]:
    """Bridge gaps shorter than `max_gap_s`, then drop spans shorter than `min_duration_s`.

    Merging comes first so that a sentence chopped at a comma survives as one long span instead of two short ones
    that would both be dropped.
    """
    merged: list[SpeechSegment] = []
    for seg in sorted(segments):
        if seg.end_s <= seg.start_s:
            continue
        if merged and seg.start_s - merged[-1].end_s < max_gap_s:
            last = merged[-1]
            merged[-1] = SpeechSegment(last.start_s, max(last.end_s, seg.end_s))
        else:
            merged.append(seg)
    return [s for s in merged if s.duration_s >= min_duration_s]


class SileroVAD:
    """silero-vad through onnxruntime; the model file comes from the installed wheel."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            try:
                from silero_vad import load_silero_vad
            except ImportError as exc:
                raise ConfigError("VAD needs the 'perception' extra (silero-vad, onnxruntime)") from exc
            self._model = load_silero_vad(onnx=True)
        return self._model

    def speech(self, audio: np.ndarray) -> list[SpeechSegment]:
        """Raw silero spans (seconds) of 16 kHz mono audio, before merging and the minimum-length filter."""
        if audio.size < SAMPLE_RATE // 10:  # under 0.1 s: nothing to find, and silero needs whole 32 ms chunks
            return []
        import torch
        from silero_vad import get_speech_timestamps

        with self._lock:
            model = self._load()
            stamps = get_speech_timestamps(
                torch.from_numpy(audio),
                model,
                threshold=VAD_THRESHOLD,
                sampling_rate=SAMPLE_RATE,
                min_silence_duration_ms=MIN_SILENCE_MS,
                speech_pad_ms=SPEECH_PAD_MS,
                return_seconds=False,
            )
        n = audio.size
        return [SpeechSegment(max(0, int(s["start"])) / SAMPLE_RATE, min(n, int(s["end"])) / SAMPLE_RATE)
                for s in stamps]


@lru_cache(maxsize=1)
def silero_vad() -> SileroVAD:
    """The process-wide VAD (one ONNX session of about 2 MB)."""
    return SileroVAD()


def detect_speech(audio: np.ndarray, config: PerceptionConfig) -> list[SpeechSegment]:
    """Speech spans of 16 kHz mono audio, merged and filtered by `config.min_speech_s`."""
    if config.vad != "silero":  # the Literal allows only silero today; fail loudly if it grows without code here
        raise ConfigError(f"unsupported VAD {config.vad!r}")
    return merge_segments(silero_vad().speech(audio), MERGE_GAP_S, config.min_speech_s)
