#!/usr/bin/env bash
# The main job on the embedded default: install what is missing, start the local Neo4j (or reuse it),
# load a generated memory and run searches. Extra arguments go to `m3graph demo`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh dev,embed,tasks,perception
exec .venv/bin/m3graph demo "$@"
