"""The Kaldi fbank features CAM++ is fed (m3graph/perception/fbank.py): values worked out by hand, an independent
float64 re-derivation, and torchaudio's own output.

`tests/data/fbank_torchaudio.npz` holds a fixed 0.25-s signal (a chirp with noise and a quiet onset) and
`torchaudio.compliance.kaldi.fbank(wave, num_mel_bins=80, sample_frequency=16000, dither=0.0)` of it, computed once
with torchaudio 2.11.0 (its `compliance/kaldi.py`, which needs only torch, loaded from the wheel beside the
installed torch). No Neo4j needed."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="fbank runs on torch (the perception extra)")

from m3graph.errors import InvalidInputError  # noqa: E402
from m3graph.perception.fbank import FLOOR, fbank, frame_count, mel_banks  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "fbank_torchaudio.npz"


def test_frame_count_snips_edges() -> None:
    assert [frame_count(n) for n in (399, 400, 559, 560, 16000)] == [0, 1, 1, 2, 98]
    assert fbank(np.ones(16000, np.float32) * 0.1).shape == (98, 80)
    with pytest.raises(InvalidInputError, match="shorter than one"):
        fbank(np.zeros(399, np.float32))
    with pytest.raises(InvalidInputError, match="non-finite"):
        fbank(np.full(800, np.nan, np.float32))


def test_a_constant_signal_is_all_floor() -> None:
    """DC removal leaves nothing: every bin is log(float32 eps) = -15.9424 (ln 2^-23)."""
    feats = fbank(np.full(1200, 0.25, np.float32))
    assert feats.shape == (6, 80)
    assert np.allclose(feats, math.log(2.0**-23), atol=1e-6)
    assert math.isclose(math.log(FLOOR), -15.942385, abs_tol=1e-6)


def test_mel_banks_by_hand() -> None:
    """Bin k's triangle rises from mel_low + k·Δ, peaks one Δ later and falls to zero one Δ after that, with
    mel(f) = 1127 ln(1 + f/700), mel_low = mel(20 Hz), Δ = (mel(8000) - mel_low) / 81; FFT bin j is at 31.25·j Hz."""
    banks = mel_banks(80, 16000).numpy()
    assert banks.shape == (80, 257) and not banks[:, 256].any()  # Nyquist unweighted
    mel = lambda f: 1127.0 * math.log(1.0 + f / 700.0)  # noqa: E731
    lo, delta = mel(20.0), (mel(8000.0) - mel(20.0)) / 81
    for k, j in ((0, 1), (0, 2), (10, 20), (79, 250), (40, 100)):
        m = mel(31.25 * j)
        left, centre, right = lo + k * delta, lo + (k + 1) * delta, lo + (k + 2) * delta
        want = max(0.0, min((m - left) / (centre - left), (right - m) / (right - centre)))
        assert banks[k, j] == pytest.approx(want, abs=2e-5), (k, j)
    assert (banks > 0).any(axis=1).all()  # every triangle covers at least one FFT bin, even the narrow low ones


def _by_hand(wave: np.ndarray) -> np.ndarray:
    """The recipe spelled out in float64, one frame at a time, with an explicit DFT sum (no FFT)."""
    banks = mel_banks(80, 16000).numpy().astype(np.float64)
    n = np.arange(400)
    window = (0.5 - 0.5 * np.cos(2 * np.pi * n / 399)) ** 0.85
    k = np.arange(257)[:, None]
    dft = np.exp(-2j * np.pi * k * np.arange(512)[None, :] / 512)
    rows = []
    for f in range(frame_count(wave.size)):
        x = wave[f * 160 : f * 160 + 400].astype(np.float64)
        x = x - x.mean()
        x = (x - 0.97 * np.concatenate([[x[0]], x[:-1]])) * window
        power = np.abs(dft @ np.pad(x, (0, 112))) ** 2
        rows.append(np.log(np.maximum(banks @ power, FLOOR)))
    return np.array(rows)


def test_agrees_with_the_recipe_spelled_out() -> None:
    data = np.load(FIXTURE)
    wave = data["wave"]
    got, want = fbank(wave).astype(np.float64), _by_hand(wave)
    loud = want > -10.0  # float32 arithmetic is exact to ~1e-5 away from the floor; near it, ~1e-3
    assert loud.mean() > 0.9
    assert np.abs(got - want)[loud].max() < 1e-4
    assert np.abs(got - want).max() < 5e-3


def test_agrees_with_torchaudio_fixture() -> None:
    """To float32's accuracy, not to the bit: the fixture's rounding is torch 2.11's FFT, and torch 2.15's differs
    by up to 3.7e-5 on loud bins and 1.8e-4 on the quietest (-12.9), where a bin far below its frame's energy
    keeps fewer correct digits. A wrong step of the recipe (window, pre-emphasis, mel edges) moves bins by far more."""
    data = np.load(FIXTURE)
    want = data["fbank"]
    assert want.shape == (23, 80)
    diff = np.abs(fbank(data["wave"]) - want)
    loud = want > -10.0
    assert loud.mean() > 0.9
    assert diff[loud].max() < 1e-4
    assert diff.max() < 1e-3

