#!/usr/bin/env bash
# Fetches the real labelled speech used by `m3graph calibrate voices`: the pyannote sample phone call
# (sample.wav/.rttm/.stm from the pyannote-audio 4.0.7 wheel) and the AMI meeting clips (tests/data/*.wav and
# debug.*.rttm from its sdist). Both archives are pinned by SHA-256; nothing is installed, only those files are
# extracted. Idempotent. Usage: scripts/fetch_identity_media.sh [OUT_DIR]   (default .m3graph/identity-media)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-.m3graph/identity-media}"
version=4.0.7
wheel="pyannote_audio-${version}-py3-none-any.whl"
sdist="pyannote_audio-${version}.tar.gz"
wheel_sha=852ea15c4d85bc34773e618267603ffca6a521669a74d33742692cc67fc700d6
sdist_sha=3a903dfb5ca711d134cc2522561c9158b186836f5d62e8a57c46c6648e8a8229
if [[ -f "$out/.done-$version" ]]; then exit 0; fi
mkdir -p "$out/dl"
check() { [[ -f "$1" ]] && echo "$2  $1" | sha256sum -c --quiet - 2>/dev/null; }
if ! check "$out/dl/$wheel" "$wheel_sha"; then
  .venv/bin/pip download --quiet --no-deps --only-binary :all: "pyannote-audio==$version" -d "$out/dl"
fi
if ! check "$out/dl/$sdist" "$sdist_sha"; then
  .venv/bin/pip download --quiet --no-deps --no-binary :all: "pyannote-audio==$version" -d "$out/dl"
fi
check "$out/dl/$wheel" "$wheel_sha" || { echo "error: $wheel does not match its SHA-256 pin" >&2; exit 78; }
check "$out/dl/$sdist" "$sdist_sha" || { echo "error: $sdist does not match its SHA-256 pin" >&2; exit 78; }
.venv/bin/python - "$out" "$out/dl/$wheel" "$out/dl/$sdist" <<'PY'
import sys, tarfile, zipfile
from pathlib import Path

out, wheel, sdist = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
with zipfile.ZipFile(wheel) as zf:
    for name in zf.namelist():
        if name.startswith("pyannote/audio/sample/") and not name.endswith("/"):
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(zf.read(name))
with tarfile.open(sdist) as tf:
    for m in tf.getmembers():
        rel = m.name.split("/", 1)[1] if "/" in m.name else ""
        if m.isfile() and rel.startswith("tests/data/") and "/" not in rel[len("tests/data/"):]:
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tf.extractfile(m).read())
PY
touch "$out/.done-$version"
echo "identity media in $out"
