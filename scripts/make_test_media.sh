#!/usr/bin/env bash
# Builds the generated test videos and their ground-truth manifest (default .m3graph/testmedia, gitignored).
# Idempotent: an up-to-date directory is left as it is. Usage: scripts/make_test_media.sh [OUT_DIR] [--force]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec .venv/bin/python -m m3graph.devkit.testmedia "$@"
