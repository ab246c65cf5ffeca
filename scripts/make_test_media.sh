#!/usr/bin/env bash
# Builds the generated test videos and their ground-truth manifest (default .m3graph/testmedia).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec .venv/bin/python -m m3graph.ingest.testmedia "${1:-.m3graph/testmedia}"
