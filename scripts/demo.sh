#!/usr/bin/env bash
# The main job on the embedded default: install what is missing, start the local Neo4j (or reuse it), then
#  1. load a small generated memory and run the controller's searches on it (`m3graph demo`);
#  2. build the generated test videos (real faces, espeak voices) and ingest them: 30 s clips -> faces and
#     voices -> persistent entities -> memories written by the offline LLM (Qwen2.5 0.5B on llama.cpp) beside
#     the perception lines, with face-voice equivalence votes;
#  3. answer questions over that memory with the H-round controller (offline Qwen2.5-Coder 1.5B), printing every
#     round and the evidence it was shown.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh  # every extra the README shows next (explorer, MCP, Browser, files) comes with it
export OMP_WAIT_POLICY=PASSIVE
.venv/bin/m3graph demo
.venv/bin/python -m m3graph.devkit.testmedia .m3graph/testmedia
.venv/bin/m3graph ingest .m3graph/testmedia/tm-a.mp4 .m3graph/testmedia/tm-b.mp4 .m3graph/testmedia/tm-silent.mp4
.venv/bin/m3graph ask "Where is the blue notebook?" --video tm-a --trace
.venv/bin/m3graph ask "Which fruit did someone call their favourite?" --video tm-b --trace
.venv/bin/m3graph ask "What fruit does Mia like?" --video demo-kitchen --trace
# A fact that changed (clip 6): what holds now, and what held before (the controller then reads old versions too).
.venv/bin/m3graph ask "What is Mia's favourite fruit now?" --video demo-kitchen
.venv/bin/m3graph ask "What was Mia's favourite fruit before?" --video demo-kitchen
.venv/bin/m3graph history demo-kitchen Mia
