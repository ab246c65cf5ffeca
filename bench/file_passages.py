"""Search latency and the answering passage's rank for questions that reach a long PDF shared in a chat (issue 39).

Why: a document is one surrogate memory per passage, all in the sharing session's clip. Before issue 39 a clip
search showed them in page order and the reader's cap (`llm.control_evidence_lines`, 12) kept the first ones; now
the reached file's passages are ranked inside the file (graphdb/passages.py) and only its best few are shown. This
measures both on the same graph, in the same run: the reader's search (`MemoryTools.search_clip` and
`search_node`, a fresh one per question, so the scope check and the query embedding are counted) end to end in
milliseconds (p50, p95), and per question whether the passage that answers it is the file's first line shown and
whether it survives the reader's cap. The 1-minute load average before and after is printed with them: on a
shared machine a loaded run's milliseconds are mostly waiting (compare the two modes of one run, and `min_ms`).

The document is tests/helpers/spec_pdf.py's rental specification at `--pages` pages (topics repeat past 17, each
page saying its number), shared in a two-session conversation; the questions each ask what one topic says.

Run: ``.venv/bin/python -m bench.file_passages [--pages 40] [--repeat 5] [--out FILE]`` on the configured Neo4j
(a local one is started when none runs; `--uri` or NEO4J_URI for another: the conversation is written there).
``--smoke``: 17 pages, one repetition (CI).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.smoke import add_smoke, add_uri, apply_smoke, scratch
from m3graph.embedding import TextEmbedder, text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.localserver.server import ensure_server
from m3graph.reasoning.control import Evidence
from m3graph.reasoning.memory_tools import MemoryTools
from m3graph.settings import Settings, load_settings
from tests.helpers.spec_pdf import TOPICS, sharing_chat, spec_pdf

SOURCE = "bench-file-passages"
# (question, the topic whose page answers it)
QUESTIONS = [
    ("How much notice does the tenant have to give to end the lease?", "Termination and notice"),
    ("Are dogs allowed in the flat?", "Pets"),
    ("How much is the monthly rent and when is it due?", "Rent"),
    ("Where do the bicycles go?", "Parking"),
    ("When are the quiet hours?", "House rules"),
    ("Who pays for small repairs?", "Repairs"),
]


def _ingest(graph: MemoryGraph, embedder: TextEmbedder, pages: int) -> None:
    root = scratch("file-passages")
    (root / "manual.pdf").write_bytes(spec_pdf(pages))
    data = sharing_chat(SOURCE, "manual.pdf", "manual")
    path = root / "chat.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    conv, _ = load_conversation(path)
    with contextlib.suppress(NotFoundError):
        graph.delete_video(SOURCE)  # a run that was stopped left it
    ingest_conversation(graph, conv, embedder, files_root=root)


def _answering(topic: str, pages: int) -> set[int]:
    return {i + 1 for i in range(pages) if TOPICS[i % len(TOPICS)][0] == topic}


def measure(graph: MemoryGraph, embedder: TextEmbedder, settings: Settings, pages: int, repeat: int
            ) -> dict[str, Any]:
    """Both modes and both tools per question, interleaved (so a change in the machine's load hits both alike)."""
    cap = settings.llm.control_evidence_lines
    runs = [(mode, tool) for mode in ("current", "ranked") for tool in ("search_clip", "search_node")]
    times: dict[tuple[str, str], list[float]] = {r: [] for r in runs}
    counts: dict[tuple[str, str], list[int]] = {r: [0, 0, 0] for r in runs}  # answer first, within cap, lines
    for _ in range(repeat):
        for question, topic in QUESTIONS:
            want = tuple(f", page {p}, " for p in _answering(topic, pages))
            for mode, tool in runs:
                tools = MemoryTools(graph.search, embedder, settings, [SOURCE])
                tools.rank_files = mode == "ranked"
                t0 = time.perf_counter()
                found = tools.search_clip(question) if tool == "search_clip" else tools.search_node(question, k=cap)
                times[(mode, tool)].append((time.perf_counter() - t0) * 1000)
                file_lines = [x for ls in found.knowledge.values() for x in ls if x.startswith("[file manual")]
                shown = [x for ls in Evidence(cap).take(found, tools.line_scores).values() for x in ls]
                c = counts[(mode, tool)]
                c[0] += bool(file_lines) and any(w in file_lines[0] for w in want)
                c[1] += any(w in x for x in shown for w in want)
                c[2] += len(file_lines)
    n = repeat * len(QUESTIONS)
    out: dict[str, Any] = {}
    for run in runs:
        ordered = sorted(times[run])
        first, kept, lines = counts[run]
        out["/".join(run)] = {"min_ms": round(ordered[0], 1), "p50_ms": round(statistics.median(ordered), 1),
                              "p95_ms": round(ordered[min(n - 1, int(0.95 * n))], 1),
                              "answer_first": f"{first // repeat}/{len(QUESTIONS)}",
                              "answer_within_cap": f"{kept // repeat}/{len(QUESTIONS)}",
                              "file_lines_per_search": round(lines / n, 1)}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.file_passages", description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=40, help="pages of the shared PDF (default 40)")
    parser.add_argument("--repeat", type=int, default=5, help="times each question is searched per mode")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON report here")
    add_uri(parser)
    add_smoke(parser, "the 17-page PDF, each question searched once per mode")
    args = apply_smoke(parser.parse_args(argv), pages=17, repeat=1)
    settings = load_settings() if not args.uri else Settings(neo4j_uri=args.uri)
    ensure_server(settings)
    with MemoryGraph.connect(settings) as graph:
        embedder = text_embedder(settings)
        _ingest(graph, embedder, args.pages)
        measure(graph, embedder, settings, args.pages, 1)  # warm: models, query plans, page cache
        load = os.getloadavg()[0]
        report = {"pages": args.pages, "repeat": args.repeat, "questions": len(QUESTIONS),
                  "cap": settings.llm.control_evidence_lines,
                  "results": measure(graph, embedder, settings, args.pages, args.repeat),
                  "loadavg_1m": [round(load, 1), round(os.getloadavg()[0], 1)]}
        graph.delete_video(SOURCE)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
