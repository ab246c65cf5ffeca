"""Development kit: what builds, measures and checks m3graph, kept apart from what it ships as memory.

- `testmedia`: generated test videos with a ground-truth manifest (`scripts/make_test_media.sh`);
- `labelled_media`: a video of real, labelled people for identity checks (`m3graph labelled ...`);
- `hosts`: simulated hosts in Linux network namespaces for multi-host fault campaigns (`bench/multihost.py`);
- `chat_files*`, `people_media`: the generated chats with files and the people-detection video;
- `real_docs`: the real-document dev set (manifest and questions in `data/real_docs.json`; the PDFs are fetched);
- `eval/`: the evaluation runners behind `m3graph eval ...` (M3-Bench, test-media QA, retrieval, chat QA);
- `cypher/`: the named queries only benchmarks and evaluations use (`bench/...`, `eval/...`), loaded by
  `m3graph.cypher` under those names like every other query.

The product packages never import this one; only the CLI commands that run it (`m3graph eval`, `m3graph labelled`)
and the demo entry do (tests/test_layers.py).
"""
