"""Optional diarization with a local pyannote.audio pipeline (`PerceptionConfig.diarization = "pyannote"`).

m3-agent-reference §10 item 11 recommends a dedicated diarizer instead of the LLM's segmentation. pyannote is the
usual choice, but it **cannot be used in this build environment**: every pyannote pipeline and model is a gated
Hugging Face download (no weights ship in any wheel), and `import pyannote.audio` fails here because the torchaudio
wheel it pulls in links CUDA libraries (see offline-models §3). So this module is real loading code for deployments
that have both the package and a pipeline on disk, and everywhere else it fails early with a message that names
what is missing. It is never chosen silently: the default `diarization = "embedding"` uses VAD + speaker embeddings.

Deployments: download the pipeline once (accepting its conditions), copy the directory (pyannote 4 "community-1"
layout) or the `config.yaml` with its model paths made local (pyannote 3.1 layout), and set
`perception.pyannote_pipeline` to it. Audio is handed over as an in-memory waveform, so pyannote's own file decoding
(torchaudio / torchcodec + FFmpeg) is not needed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from m3graph.errors import ConfigError
from m3graph.perception.vad import MERGE_GAP_S, SAMPLE_RATE, SpeechSegment, merge_segments
from m3graph.settings import PerceptionConfig

_LOCK = threading.Lock()


@dataclass(frozen=True)
class SpeakerTurn:
    """One speaker turn from pyannote, clip-relative seconds; `speaker` is pyannote's per-file label."""

    start_s: float
    end_s: float
    speaker: str


def pipeline_path(config: PerceptionConfig) -> Path:
    """The configured local pipeline, or a ConfigError saying what to configure (checked before any import)."""
    if config.pyannote_pipeline is None:
        raise ConfigError(
            "diarization='pyannote' needs perception.pyannote_pipeline: a local pyannote pipeline directory or "
            "config.yaml (hub pipelines are gated downloads and are not fetched); or use diarization='embedding'"
        )
    path = Path(config.pyannote_pipeline).expanduser()
    if not path.exists():
        raise ConfigError(f"perception.pyannote_pipeline {path} does not exist")
    return path


@lru_cache(maxsize=1)
def _load(path: Path, threads: int) -> Any:
    try:
        import torch
        from pyannote.audio import Pipeline
    except (ImportError, OSError) as exc:  # OSError: torchaudio's CUDA-linked extension failing to load
        raise ConfigError(
            f"diarization='pyannote' needs the package 'pyannote.audio' importable with a working torchaudio "
            f"(pip install pyannote.audio); import failed: {exc}"
        ) from exc
    if torch.get_num_threads() > threads:
        torch.set_num_threads(threads)
    pipeline = Pipeline.from_pretrained(str(path))
    if pipeline is None:  # pyannote 3.x returns None instead of raising when a checkpoint cannot be found
        raise ConfigError(f"pyannote could not load a pipeline from {path}")
    pipeline.to(torch.device("cpu"))
    return pipeline


def load_pipeline(config: PerceptionConfig) -> Any:
    """The pyannote Pipeline for `config`, loaded once per process."""
    return _load(pipeline_path(config), config.threads)


def diarize(audio: np.ndarray, config: PerceptionConfig) -> list[SpeakerTurn]:
    """Speaker turns of 16 kHz mono audio.

    pyannote 4 returns both overlapping and "exclusive" (one speaker at a time) diarization; the exclusive one is used
    because each turn is then embedded and transcribed on its own, and overlapped speech would contaminate both.
    Same-speaker turns closer than MERGE_GAP_S are joined and turns shorter than `min_speech_s` dropped, as for VAD.
    """
    pipeline = load_pipeline(config)
    import torch

    with _LOCK, torch.inference_mode():
        output = pipeline({"waveform": torch.from_numpy(audio).unsqueeze(0), "sample_rate": SAMPLE_RATE})
    annotation = getattr(output, "exclusive_speaker_diarization", None) or getattr(
        output, "speaker_diarization", output
    )
    by_speaker: dict[str, list[SpeechSegment]] = {}
    for segment, _track, speaker in annotation.itertracks(yield_label=True):
        by_speaker.setdefault(str(speaker), []).append(SpeechSegment(float(segment.start), float(segment.end)))
    turns = [SpeakerTurn(s.start_s, s.end_s, speaker)
             for speaker, segs in by_speaker.items()
             for s in merge_segments(segs, MERGE_GAP_S, config.min_speech_s)]
    return sorted(turns, key=lambda t: (t.start_s, t.end_s, t.speaker))
