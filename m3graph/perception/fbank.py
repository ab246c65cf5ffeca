"""Kaldi log-mel filterbank features (the input CAM++ was trained on), in torch ops without torchaudio.

3D-Speaker computes its features with `torchaudio.compliance.kaldi.fbank(wave, num_mel_bins=80, dither=0)` on a
waveform in [-1, 1]. torchaudio is not a dependency here (each of its wheels pins one torch release, and none
matches the installed torch), so the same computation is written out: 25-ms frames every 10 ms (edges snipped),
per-frame DC removal, pre-emphasis 0.97, Povey window, FFT of 512 points, power spectrum, 80 triangular mel bins
from 20 Hz to Nyquist, log with a floor of float32's epsilon.

It runs in float32 with torch's own FFT and log, in torchaudio's order of operations, because the model was trained
on exactly those numbers: torchaudio's float32 features differ from an exact float64 evaluation by up to 2e-3 on
quiet frames (float32 FFT error near the floor) and its float32 mel banks by up to 3e-4, while this module and
torchaudio agree to 1e-5 (`tests/test_fbank.py`: hand-computed values, and a committed torchaudio fixture).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from m3graph.errors import InvalidInputError

if TYPE_CHECKING:
    import torch

FRAME_LENGTH = 400  # 25 ms at 16 kHz
FRAME_SHIFT = 160  # 10 ms
PREEMPHASIS = 0.97
LOW_FREQ_HZ = 20.0
FLOOR = float(np.finfo(np.float32).eps)  # torchaudio's EPSILON in log(max(energy, eps))


def _mel(freq: float) -> float:
    return 1127.0 * math.log(1.0 + freq / 700.0)


def padded_length(frame_length: int) -> int:
    """The FFT size: the frame length rounded up to a power of two (400 -> 512)."""
    return 1 << (frame_length - 1).bit_length()


@lru_cache(maxsize=8)
def mel_banks(num_bins: int, sample_rate: int, padded: int = 512) -> torch.Tensor:
    """(num_bins, padded // 2 + 1) float32 triangular weights on the mel scale (Kaldi's `MelBanks`, no VTLN)."""
    import torch

    bin_width = sample_rate / padded
    mel_low, mel_high = _mel(LOW_FREQ_HZ), _mel(sample_rate / 2)
    delta = (mel_high - mel_low) / (num_bins + 1)
    index = torch.arange(num_bins).unsqueeze(1)
    left = mel_low + index * delta
    centre = mel_low + (index + 1.0) * delta
    right = mel_low + (index + 2.0) * delta
    mel = (1127.0 * (1.0 + bin_width * torch.arange(padded // 2) / 700.0).log()).unsqueeze(0)
    up = (mel - left) / (centre - left)
    down = (right - mel) / (right - centre)
    weights = torch.max(torch.zeros(1), torch.min(up, down))
    return torch.nn.functional.pad(weights, (0, 1))  # the Nyquist bin gets no weight, as in Kaldi


@lru_cache(maxsize=8)
def povey_window(length: int) -> torch.Tensor:
    """Kaldi's default window: a symmetric Hann window raised to the power 0.85."""
    import torch

    return torch.hann_window(length, periodic=False, dtype=torch.float32).pow(0.85)


def frame_count(samples: int, frame_length: int = FRAME_LENGTH, frame_shift: int = FRAME_SHIFT) -> int:
    return 0 if samples < frame_length else 1 + (samples - frame_length) // frame_shift


def fbank(wave: np.ndarray, sample_rate: int = 16000, num_bins: int = 80) -> np.ndarray:
    """(frames, num_bins) float32 log mel energies of a mono waveform in [-1, 1]; frames = 1 + (n - 400) // 160."""
    import torch

    x = np.asarray(wave, dtype=np.float32)
    if x.ndim != 1:
        raise InvalidInputError(f"fbank expects a mono waveform, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise InvalidInputError("fbank got a waveform with non-finite samples")
    length = FRAME_LENGTH * sample_rate // 16000
    shift = FRAME_SHIFT * sample_rate // 16000
    n = frame_count(x.size, length, shift)
    if n == 0:
        raise InvalidInputError(f"a waveform of {x.size} samples is shorter than one {length}-sample frame")
    with torch.inference_mode():
        frames = torch.from_numpy(x).unfold(0, length, shift)[:n]
        frames = frames - frames.mean(dim=1, keepdim=True)
        previous = torch.nn.functional.pad(frames.unsqueeze(0), (1, 0), mode="replicate").squeeze(0)[:, :-1]
        frames = (frames - PREEMPHASIS * previous) * povey_window(length).unsqueeze(0)
        padded = padded_length(length)
        frames = torch.nn.functional.pad(frames.unsqueeze(0), (0, padded - length), value=0.0).squeeze(0)
        power = torch.fft.rfft(frames).abs().pow(2.0)
        energies = torch.mm(power, mel_banks(num_bins, sample_rate, padded).T)
        return torch.max(energies, torch.tensor(FLOOR)).log().numpy().astype(np.float32, copy=False)
