"""Was the answering passage shown, and if not why: the real-document set's first search, old and new shown side by
side, per half of the documents (issue 39).

Why: `m3graph eval chat-files --category real-docs` answers every question with the reader model (minutes per
run) and says only whether the answering text was among the lines shown. Improving the passages shown needs to know,
per miss, where the answer was lost: **not in one passage** (the supporting text is split over two passages or
extracted differently), **ranked below** (the file's ranking put the answering passage past the passages shown per
file; its rank is printed), **dropped by the cap** (it was among the file's passages but the reader's line cap kept
other lines), or **cut** (shown, but the answering sentence is past the reader's character cut). This runs the
reader's first round only (`MemoryTools.search_node` with the question, then `Evidence.take`, the reader's cap and
cut), no model, so a run takes seconds; the variants run on the same graph in the same run.

To keep from fitting the dev questions, the documents are split into two halves by a fixed rule (sorted by file
name, alternating: A = 1st, 3rd, ...; B = 2nd, 4th, ...): develop on A, and report A and B separately.

Run (on the graph the chat-files evaluation ingested the real documents into):
``python -m m3graph.devkit.eval.real_docs_shown --set-dir DIR [--out FILE]`` where DIR is the set's folder
(`m3graph eval chat-files --set-dir`), holding ``real-docs/questions.json``. With ``--records
OUT/chat-files-files.jsonl`` (repeatable) it instead splits an evaluation's results by half: answer match and the
answering passage shown, per half, for the runs named (no graph needed).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m3graph.devkit.eval.chat_files_real import loose, passage_shown, shown_lines
from m3graph.devkit.real_docs import SET_NAME, load_manifest, load_set_questions
from m3graph.embedding import TextEmbedder, text_embedder
from m3graph.graphdb import passages
from m3graph.graphdb.excerpts import EXCERPT_CHARS
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipResult
from m3graph.localserver.server import ensure_server
from m3graph.reasoning.control import Evidence
from m3graph.reasoning.memory_tools import MemoryTools
from m3graph.settings import Settings, load_settings


@dataclass(frozen=True)
class Variant:
    """How a reached file's passages are shown: how many per file, and excerpted or cut."""

    name: str
    per_file: int = passages.PER_FILE
    excerpt_chars: int | None = EXCERPT_CHARS


# "old": 3 passages per file, their first characters (the reader's cut); "new-k3": 3, query-focused excerpts
# (graphdb/excerpts.py); "new": `passages.PER_FILE` (4) passages, excerpts.
VARIANTS = (Variant("old", per_file=3, excerpt_chars=None), Variant("new-k3", per_file=3), Variant("new"))


class _Tools(MemoryTools):
    """The reader's tools with one variant's file ranking, keeping what the ranking returned."""

    def __init__(self, *args: Any, variant: Variant, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.variant = variant
        self.ranked: list[ClipResult] = []

    def _rank_files(self, query: str, results: list[ClipResult]) -> tuple[list[ClipResult], list[str]]:
        if not any(passages.may_reach_file(m.raw_text) for r in results for m in r.memories):
            return results, []
        ranked = passages.rank_in_results(self.search.ex, self.settings, results, self._vector(query), query,
                                          self.videos, self.before_clip, k=self.variant.per_file,
                                          excerpt_chars=self.variant.excerpt_chars)
        self.ranked = ranked.results
        return ranked.results, ranked.citations


def halves(names: Sequence[str]) -> dict[str, str]:
    """File name -> "A" or "B": sorted by name, alternating (a fixed rule, no look at the questions)."""
    return {name: "AB"[i % 2] for i, name in enumerate(sorted(names))}


def diagnose(graph: MemoryGraph, embedder: TextEmbedder, settings: Settings, source: str, question: str,
             support: str, variant: Variant) -> dict[str, Any]:
    """One question's first round under one variant: shown or not, and where it was lost."""
    cap = settings.llm.control_evidence_lines
    want = loose(support)
    tools = _Tools(graph.search, embedder, settings, [source], variant=variant)
    found = tools.search_node(question, k=cap)
    shown = [x for ls in Evidence(cap).take(found, tools.line_scores).values() for x in ls]
    if any(want in loose(x) for x in shown):
        return {"shown": True, "why": "shown"}
    ranked = [m for r in tools.ranked for m in r.memories if m.raw_text.startswith("[file ")]
    if any(want in loose(m.raw_text) for m in ranked):
        shown_text = [m for m in ranked if want in loose(m.raw_text)]
        in_lines = any(loose(m.text)[:60] in loose(x) for m in shown_text for x in shown)
        return {"shown": False, "why": "cut" if in_lines else "dropped by the cap"}
    # how far down the file's own ranking is it?
    deep = _Tools(graph.search, embedder, settings, [source], variant=Variant("deep", 400, None))
    deep.search_node(question, k=cap)
    order = [m for r in deep.ranked for m in r.memories if m.raw_text.startswith("[file ")]
    rank = next((i + 1 for i, m in enumerate(order) if want in loose(m.raw_text)), None)
    if rank is None:
        return {"shown": False, "why": "not in one passage" if order else "file not reached"}
    return {"shown": False, "why": "ranked below", "rank": rank}


def run(settings: Settings, set_dir: Path) -> dict[str, Any]:
    """Every real-document question under every variant; per half and variant the share shown, and the misses."""
    manifest = load_manifest()
    questions, where = load_set_questions(set_dir / SET_NAME / "questions.json")
    half = halves([d.name for d in manifest.documents])
    out: dict[str, Any] = {"halves": {}, "questions": []}
    ensure_server(settings)
    with MemoryGraph.connect(settings) as graph:
        embedder = text_embedder(settings)
        for q in questions:
            page, support = where[q.id]
            name = q.files[0] if q.files else ""
            row: dict[str, Any] = {"id": q.id, "half": half.get(name, "?"), "page": page}
            for v in VARIANTS:
                row[v.name] = diagnose(graph, embedder, settings, q.conversation, q.question, support, v)
            out["questions"].append(row)
    for h in ("A", "B"):
        rows = [r for r in out["questions"] if r["half"] == h]
        out["halves"][h] = {v.name: f"{sum(r[v.name]['shown'] for r in rows)}/{len(rows)}" for v in VARIANTS}
    rows = out["questions"]
    out["halves"]["all"] = {v.name: f"{sum(r[v.name]['shown'] for r in rows)}/{len(rows)}" for v in VARIANTS}
    return out


def records_by_half(set_dir: Path, results: Path) -> dict[str, dict[str, str]]:
    """An evaluation's files results (``chat-files-files.jsonl``) per half: answer match and the answering passage
    in the shown lines (letters and digits compared, and exact), so two runs' halves can be set side by side."""
    manifest = load_manifest()
    questions, where = load_set_questions(set_dir / SET_NAME / "questions.json")
    half = halves([d.name for d in manifest.documents])
    by_id = {f"files/{q.id}": q for q in questions}
    cells: dict[str, list[int]] = {}
    for line in results.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        q = by_id.get(record.get("id", ""))
        if q is None:
            continue
        page, support = where[q.id]
        name = q.files[0] if q.files else ""
        passage, _, exact = passage_shown(shown_lines(record), name, page, support)
        for key in (half.get(name, "?"), "all"):
            c = cells.setdefault(key, [0, 0, 0, 0])
            c[0] += 1
            c[1] += record.get("answer_match") == "yes"
            c[2] += passage
            c[3] += exact
    return {k: {"n": str(n), "answer_match": f"{m}/{n}", "passage_shown": f"{p}/{n}", "exact": f"{e}/{n}"}
            for k, (n, m, p, e) in sorted(cells.items())}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m m3graph.devkit.eval.real_docs_shown",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--set-dir", type=Path, required=True, help="the chat-files set folder (--set-dir)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON report here")
    parser.add_argument("--records", type=Path, action="append", default=[],
                        help="an evaluation's chat-files-files.jsonl: its figures per half instead (repeatable)")
    args = parser.parse_args(argv)
    if args.records:
        for path in args.records:
            print(path, json.dumps(records_by_half(args.set_dir, path), indent=1))
        return 0
    report = run(load_settings(), args.set_dir)
    for r in report["questions"]:
        cells = [f"{v.name}: {r[v.name]['why']}" + (f" (rank {r[v.name]['rank']})" if "rank" in r[v.name] else "")
                 for v in VARIANTS]
        print(r["id"], r["half"], *cells, sep="\t")
    print(json.dumps(report["halves"], indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
