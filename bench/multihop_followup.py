"""Multi-hop follow-up search (bench/search_followup.py) on the LoCoMo dev set, through the product's search.

Why: the follow-up is off by default until it is measured. This runs, per question with evidence, the product's
`search_clip` / `search_node` (off) and the follow-up strategies over a small grid, scores all-evidence clip
recall@k and evidence-turn recall@k per category (`m3graph eval retrieval`'s definitions and corpus), chooses
each strategy's parameters leave-one-conversation-out (fit on two conversations by the all-category mean, score
the third) and reports the in-sample best beside the held-out figure. The fusion is the module's own
(`fuse_clips`, `merge_nodes`, `FollowUpSearch.followup`), run over the product's searches; the chosen setting is
then re-run through `FollowUpSearch` itself for a latency p50 and to check that it returns the same clips.

    .venv/bin/python -m bench.multihop_followup [--data DIR] [--port 7716] [--home DIR] [--out FILE] [--limit N]

`--uri URI` runs on a running server instead of starting one (the conversations are ingested there); `--smoke` is
the CI size: two sessions of two conversations, a few questions each (held out needs two conversations).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.search_followup import FollowUpConfig, FollowUpSearch, _memories_by_rank, fuse_clips, merge_nodes
from bench.smoke import add_smoke, add_uri, apply_smoke, conversation_slice, scratch, server_settings
from m3graph.devkit.eval.retrieval import CATEGORIES, NO_EVIDENCE_CATEGORIES, Corpus, ingest, load_dataset
from m3graph.embedding import query_embed, text_embedder
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.localserver.server import ensure_server
from m3graph.settings import LocalServer

ROOT = Path(__file__).resolve().parent.parent
_TURN = re.compile(r"D(\d+):(\d+)")
STRATEGIES = ("terms", "feedback", "spread")
TERMS = (4, 8)
SEEDS = 5
CLIP_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7)
NODE_SLOTS = (0, 2, 4)


def _turns(results: Sequence[Any]) -> set[str]:
    return {s for r in results for m in r.memories for s in m.source_ids}


def run(graph: MemoryGraph, embedder: Any, questions: list[Any], clip_k: int, node_k: int,
        strategies: Sequence[str] = STRATEGIES) -> dict[str, Any]:
    search = graph.search
    embed = query_embed(embedder)
    corpora: dict[str, Corpus] = {}
    spread = FollowUpSearch(search, FollowUpConfig(strategy="spread"))
    rows: list[dict[str, Any]] = []
    for q in questions:
        if q.category in NO_EVIDENCE_CATEGORIES:
            continue
        corpus = corpora.get(q.source_id) or corpora.setdefault(q.source_id, Corpus.read(graph, q.source_id))
        evidence = {f"D{m.group(1)}:{m.group(2)}" for e in q.evidence for m in _TURN.finditer(e)} & set(
            corpus.turn_clip)
        if not evidence:
            continue
        ev_clips = {corpus.turn_clip[t] for t in evidence}
        vec = embed([q.question])[0].tolist()
        kw: dict[str, Any] = {"videos": [q.source_id]}
        row: dict[str, Any] = {"video": q.source_id, "cat": f"{q.category} {CATEGORIES[q.category]}",
                               "clip": {}, "node": {}}
        first_clips = search.search(SearchSpec(vec, k=max(clip_k, 10), text=q.question, **kw))
        seeds_all = _memories_by_rank(
            search.search(SearchSpec(vec, mode="node", k=SEEDS, text=q.question, **kw)))[:SEEDS]
        firsts = {r: search.search(SearchSpec(vec, mode="node", k=node_k - r, text=q.question, **kw))
                  for r in NODE_SLOTS}
        off_clips = [c.clip_index for c in first_clips[:clip_k]]
        row["clip"]["off"] = float(ev_clips <= set(off_clips))
        row["node"]["off"] = len(evidence & _turns(firsts[0])) / len(evidence)
        for strategy, n in itertools.product(strategies, TERMS):
            if strategy == "spread" and n != TERMS[0]:
                continue  # adds no words: one setting of n is enough
            fu = spread if strategy == "spread" else FollowUpSearch(
                search, FollowUpConfig(strategy=strategy, seeds=SEEDS, terms=n))
            plan = fu.followup(vec, q.question, seeds_all, [q.source_id])
            second = fu.second.search(SearchSpec(plan[0], k=max(clip_k, 10), text=plan[1], **kw)) if plan else []
            for w in CLIP_WEIGHTS:
                got = fuse_clips(first_clips, second, w, clip_k) if plan else first_clips[:clip_k]
                row["clip"][f"{strategy} n={n} w={w}"] = float(ev_clips <= {c.clip_index for c in got})
            for r in NODE_SLOTS:
                if r == 0:
                    continue
                seeds = _memories_by_rank(firsts[r])[:SEEDS]
                p2 = fu.followup(vec, q.question, seeds, [q.source_id])
                again = SearchSpec(p2[0], mode="node", k=node_k, text=p2[1], **kw) if p2 else None
                got_n = (merge_nodes(firsts[r], fu.second.search(again), node_k) if again
                         else search.search(SearchSpec(vec, mode="node", k=node_k, text=q.question, **kw)))
                row["node"][f"{strategy} n={n} r={r}"] = len(evidence & _turns(got_n)) / len(evidence)
        rows.append(row)
        if len(rows) % 50 == 0:
            print(f"  {len(rows)} questions", flush=True)
    return {"rows": rows}


def _mean(rows: Sequence[dict[str, Any]], table: str, key: str, cat: str | None = None) -> float:
    vals = [r[table][key] for r in rows if cat is None or r["cat"] == cat]
    return float(np.mean(vals)) if vals else float("nan")


def held_out(rows: list[dict[str, Any]], table: str, keys: Sequence[str]) -> tuple[dict[str, float], list[str]]:
    """Per held-out conversation: the key best on the other two (all categories), scored on this one."""
    videos = sorted({r["video"] for r in rows})
    picked: list[str] = []
    scored: list[tuple[dict[str, Any], str]] = []
    for v in videos:
        train = [r for r in rows if r["video"] != v]
        best = max(keys, key=lambda k: (_mean(train, table, k), k == "off"))
        picked.append(best)
        scored += [(r, best) for r in rows if r["video"] == v]
    cats = sorted({r["cat"] for r in rows})
    out = {c: float(np.mean([r[table][k] for r, k in scored if r["cat"] == c])) for c in cats}
    out["all"] = float(np.mean([r[table][k] for r, k in scored]))
    return out, picked


def report(rows: list[dict[str, Any]], strategies: Sequence[str] = STRATEGIES) -> dict[str, Any]:
    cats = sorted({r["cat"] for r in rows})
    out: dict[str, Any] = {"questions": len(rows), "counts": {c: sum(r["cat"] == c for r in rows) for c in cats}}
    for table in ("clip", "node"):
        keys = list(rows[0][table])
        out[table] = {k: {**{c: _mean(rows, table, k, c) for c in cats}, "all": _mean(rows, table, k)} for k in keys}
        for strategy in strategies:
            mine = ["off", *[k for k in keys if k.startswith(strategy + " ")]]
            ho, picked = held_out(rows, table, mine)
            best = max(mine, key=lambda k: _mean(rows, table, k))
            on = [k for k in mine[1:] if "w=0.0" not in k]  # for latency: settings under which the follow-up runs
            running = max(on, key=lambda k: _mean(rows, table, k))
            out[f"{table}_{strategy}"] = {"in_sample_best": best, "in_sample": out[table][best], "best_on": running,
                                          "held_out": ho, "picked_per_fold": picked}
    return out


def latency(search: Any, embedder: Any, questions: list[Any], cfg: FollowUpConfig, n: int) -> dict[str, float]:
    embed = query_embed(embedder)
    fu = FollowUpSearch(search, cfg)
    times: dict[str, list[float]] = {"clip": [], "node": []}
    for q in questions[:n]:
        vec = embed([q.question])[0].tolist()
        t0 = time.perf_counter()
        fu.search(SearchSpec(vec, videos=[q.source_id], k=2, text=q.question))
        t1 = time.perf_counter()
        fu.search(SearchSpec(vec, mode="node", videos=[q.source_id], k=10, text=q.question))
        times["clip"].append(t1 - t0)
        times["node"].append(time.perf_counter() - t1)
    return {k: float(np.percentile(v, 50) * 1000) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "conversations")
    ap.add_argument("--port", type=int, default=7716)
    ap.add_argument("--home", type=Path, default=ROOT / ".m3graph" / "neo4j-multihop")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "multihop_followup.json")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions of each file")
    ap.add_argument("--latency-questions", type=int, default=60)
    ap.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    add_uri(ap)
    add_smoke(ap, "two sessions of two conversations, 6 questions each, 2 latency questions")
    args = apply_smoke(ap.parse_args(), limit=None, latency_questions=2)
    if args.smoke:
        args.data = conversation_slice(scratch("multihop"), sessions=2, questions=6, files=2, source=args.data)
    settings = server_settings(args.uri, LocalServer(home=args.home, port=args.port, heap_mb=1024, pagecache_mb=512,
                                                     build_dir=ROOT / ".m3graph" / "launcher-build"))
    embedder = text_embedder(settings)
    ensure_server(settings)
    with MemoryGraph.connect(settings) as graph:
        questions = []
        for path in sorted(args.data.glob("*.json")):
            conv, qs = load_dataset(path)
            ingest(graph, embedder, conv)
            questions += qs[:args.limit] if args.limit else qs
        t0 = time.perf_counter()
        result = report(run(graph, embedder, questions, 2, 10, args.strategies)["rows"], args.strategies)
        result["grid_s"] = time.perf_counter() - t0
        scored = [q for q in questions if q.category not in NO_EVIDENCE_CATEGORIES]
        lat = {"off": latency(graph.search, embedder, scored, FollowUpConfig(), args.latency_questions)}
        for strategy in args.strategies:
            c = result[f"clip_{strategy}"]["best_on"]
            nk = result[f"node_{strategy}"]["best_on"]
            n = int(re.search(r"n=(\d+)", c + " " + nk + " n=8").group(1))  # type: ignore[union-attr]
            w = float(re.search(r"w=([\d.]+)", c).group(1)) if "w=" in c else 0.0  # type: ignore[union-attr]
            r = int(re.search(r"r=(\d+)", nk).group(1)) if "r=" in nk else 0  # type: ignore[union-attr]
            lat[strategy] = latency(graph.search, embedder, scored, FollowUpConfig(
                strategy=strategy, seeds=SEEDS, terms=n, clip_weight=w, node_slots=r), args.latency_questions)
        result["latency_p50_ms"] = lat
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for table in ("clip", "node"):
        print(f"\n{table}: " + json.dumps({k: v for k, v in result.items() if k.startswith(table + '_')}, indent=1))
    print("latency p50 ms (graph, given the vector; follow-up at each strategy's best setting):", json.dumps(lat))
    print(f"report: {args.out}")


if __name__ == "__main__":
    main()
