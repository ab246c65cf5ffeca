#!/usr/bin/env bash
# The main job on the embedded default: install what is missing, start the local Neo4j (or reuse it), then
#  1. load a small generated memory and run the controller's searches on it (`m3graph demo`);
#  2. build the generated test videos (real faces, espeak voices) and ingest them: 30 s clips -> faces and
#     voices -> persistent entities -> perception memories, then search them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh dev,embed,tasks,perception
export OMP_WAIT_POLICY=PASSIVE
.venv/bin/m3graph demo
.venv/bin/python -m m3graph.ingest.testmedia .m3graph/testmedia
.venv/bin/m3graph ingest .m3graph/testmedia/tm-a.mp4 .m3graph/testmedia/tm-b.mp4 .m3graph/testmedia/tm-silent.mp4
.venv/bin/m3graph search "who asked to call the doctor?" --video tm-a --threshold 0.2
.venv/bin/m3graph search "favourite fruit" --video tm-b --threshold 0.2
