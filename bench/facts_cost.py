"""What "facts that change" costs on the write path: one new semantic memory with a slot against one without.

A clip write whose statement has a slot (`m3graph/fact_versions.py`) runs three more statements than one without:
`facts/link_things` (its named things), `facts/slot_assertions` (the slot's history) and `facts/set_versions`
(the versions, SUPERSEDES edges). This measures what they add, side by side in one run:

* preload: `--memories` N memories through the product's own write path (`write_clip_memories`, ten clips per
  transaction, random unit vectors of the text dimension), so slot properties, named things and versions are
  exactly what the product writes. Each source (`--clips-per-source` clips of 20: 14 episodic, 5 statements
  with a slot such as "Person 3's favourite colour is red.", 1 statement the parser cannot read) has 14 people x
  6 attributes = 84 slots, each stated 1-5 times (uniform) in random clips, with values that sometimes repeat;
* measured: `--pairs` pairs of new clips, each one `write_memories` of ONE semantic memory (plus `--episodic`
  episodic ones): (a) "new" a statement with a slot that supersedes an existing version of that source (another
  value), (b) "old" a statement with no slot (the path before slots existed). The two kinds alternate in random
  order on the same sources; the clip is registered first (untimed, like `bench_writes`). Reported: p50/p90 of the
  whole call and of the `facts/*` statements alone (the time inside `Tx.run`, as bench/dissect.py takes it),
  their ratio, and the EXPLAIN plans of `facts/slot_assertions` and `facts/history` on the loaded store.

It starts its own Neo4j (a home it creates and deletes; never a server it did not start) and stops it:

    python -m bench.facts_cost --memories 10000 --out bench/results/facts-1e4.json

`--uri URI` measures on a running server instead (a scratch database: the sources are written there and left);
`--smoke` is the CI size (one preloaded source of 1,000 memories, 3 measured pairs).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.dissect import QueryTimer
from bench.measure import bench_ping
from bench.run import git_state
from bench.scratch_home import scratch_server
from bench.smoke import add_smoke, add_uri, apply_smoke
from m3graph.cypher import query
from m3graph.fact_versions import statement_of
from m3graph.graphdb.executor import Tx
from m3graph.graphdb.facts import history
from m3graph.graphdb.memories import write_clip_memories
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo, MemoryIn
from m3graph.localserver.server import ensure_server

log = logging.getLogger("bench.facts_cost")
MARKER = ".m3graph-facts-bench-home"
PEOPLE, ATTRIBUTES = 14, ("colour", "fruit", "drink", "book", "city", "sport")
VALUES = ("red", "blue", "green", "mango", "tea", "coffee", "Oslo", "Lima", "tennis", "chess", "Dune", "Emma")
PER_CLIP, SLOTTED = 20, 5  # memories per preloaded clip, of which statements with a slot (plus 1 without)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=10000, help="memories preloaded before measuring")
    p.add_argument("--pairs", type=int, default=200, help="measured (with slot, without slot) clip pairs")
    p.add_argument("--warmup", type=int, default=10, help="untimed pairs first")
    p.add_argument("--episodic", type=int, default=0, help="episodic memories beside the one semantic memory")
    p.add_argument("--clips-per-source", type=int, default=50)
    p.add_argument("--batch-clips", type=int, default=10, help="preloaded clips per transaction")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--home", type=Path, default=Path("/tmp/m3graph-facts-bench"), help="server home (deleted)")
    p.add_argument("--port", type=int, default=7698)
    p.add_argument("--heap-mb", type=int, default=2048)
    p.add_argument("--pagecache-mb", type=int, default=2048)
    p.add_argument("--out", type=Path, help="write the results here as JSON")
    p.add_argument("--keep", action="store_true", help="leave the store and the server running")
    add_uri(p)
    add_smoke(p, "one source of 1,000 memories (every slot stated), 3 measured pairs")
    # One whole source (50 clips): fewer clips leave some slots unstated, and the measured write must supersede.
    return apply_smoke(p.parse_args(argv), memories=1000, pairs=3, warmup=1, clips_per_source=50, batch_clips=25,
                       heap_mb=1024, pagecache_mb=512)


def unit_vectors(rng: np.random.Generator, n: int, dim: int) -> list[list[float]]:
    v = rng.standard_normal((n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).tolist()


def source_clips(s: int, clips: int, rng: np.random.Generator, dim: int) -> list[list[MemoryIn]]:
    """The memories of one preloaded source, clip by clip (see the module docstring for the shape)."""
    statements = [f"Person {s * PEOPLE + p}'s favourite {a} is {VALUES[int(rng.integers(len(VALUES)))]}."
                  for p in range(PEOPLE) for a in ATTRIBUTES for _ in range(int(rng.integers(1, 6)))]
    rng.shuffle(statements)
    out = []
    for c in range(clips):
        mine = statements[c * SLOTTED:(c + 1) * SLOTTED] if c * SLOTTED < len(statements) else []
        texts = [(f"Person {s * PEOPLE + (c + j) % PEOPLE} walks past the window with the newspaper, "
                  f"moment {j} of clip {c} of source {s}.", "episodic") for j in range(PER_CLIP - 1 - len(mine))]
        texts += [(t, "semantic") for t in mine]
        texts.append((f"The light in clip {c} of source {s} was soft and the room was quiet.", "semantic"))
        vecs = unit_vectors(rng, len(texts), dim)
        out.append([MemoryIn(kind=k, text=t, embedding=e) for (t, k), e in zip(texts, vecs, strict=True)])
    return out


def clip_info(vid: str, c: int) -> ClipInfo:
    return ClipInfo(source_id=vid, clip_index=c, start_s=30.0 * c, end_s=30.0 * c + 30.0)


def preload(graph: MemoryGraph, n: int, clips_per_source: int, batch: int, rng: np.random.Generator
            ) -> dict[str, Any]:
    """Writes whole sources through the product's clip write until at least `n` memories exist."""
    settings, dim = graph.settings, graph.settings.memory.text_dim
    started = last = time.perf_counter()
    written = sources = 0
    while written < n:
        vid = f"facts-s{sources:04d}"
        clips = source_clips(sources, clips_per_source, rng, dim)
        graph.ex.write("graph/upsert_clip", clips=[clip_info(vid, c).upsert_params() for c in range(len(clips))])
        for lo in range(0, len(clips), batch):
            part = list(enumerate(clips))[lo:lo + batch]

            def write(tx: Tx, part: list[tuple[int, list[MemoryIn]]] = part, vid: str = vid) -> None:
                for c, mems in part:
                    write_clip_memories(tx, settings, vid, c, mems)
            graph.ex.write_tx(write, label="facts_preload")
        written += sum(len(m) for m in clips)
        sources += 1
        if time.perf_counter() - last > 30:
            last = time.perf_counter()
            log.info("preloaded %d/%d memories (%.0f/s)", written, n, written / (last - started))
    seconds = time.perf_counter() - started
    return {"memories": written, "sources": sources, "clips": sources * clips_per_source, "seconds": seconds,
            "memories_per_s": written / seconds}


def plan_ops(graph: MemoryGraph, name: str, params: dict[str, Any]) -> list[str]:
    """The operators (and their index details) of a statement's EXPLAIN on the loaded store."""
    with graph.ex.session() as session:
        plan = session.run("CYPHER replan=force EXPLAIN " + query(name).text, params).consume().plan
    assert plan is not None  # EXPLAIN always returns one

    def walk(p: dict[str, Any]) -> list[str]:
        here = f"{p['operatorType'].split('@')[0]} {p.get('args', {}).get('Details', '')}".strip()
        return [here] + [x for child in p.get("children", []) for x in walk(child)]
    return walk(plan)


def summary(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {"n": int(a.size), "p50_ms": float(np.percentile(a, 50)), "p90_ms": float(np.percentile(a, 90)),
            "mean_ms": float(a.mean())}


def measure(graph: MemoryGraph, sources: int, clips_per_source: int, args: argparse.Namespace,
            rng: np.random.Generator) -> dict[str, Any]:
    dim = graph.settings.memory.text_dim
    order = random.Random(args.seed)
    calls: dict[str, list[float]] = {"new": [], "old": []}
    facts: dict[str, list[float]] = {"new": [], "old": []}
    per_statement: dict[str, list[float]] = {}
    checked = None
    for i in range(args.warmup + args.pairs):
        s = i % sources
        vid, step = f"facts-s{s:04d}", i // sources
        person, attribute = s * PEOPLE + step % PEOPLE, ATTRIBUTES[(step // PEOPLE) % len(ATTRIBUTES)]
        texts = {"new": f"Person {person}'s favourite {attribute} is value {i}.",
                 "old": f"The light in measured clip {i} of source {s} was soft and the room was quiet."}
        kinds = ["new", "old"]
        order.shuffle(kinds)
        for j, kind in enumerate(kinds):
            c = clips_per_source + 2 * step + j
            graph.upsert_clip(clip_info(vid, c))
            vecs = unit_vectors(rng, 1 + args.episodic, dim)
            mems = [MemoryIn(kind="episodic", text=f"Moment {k} of measured clip {c}.", embedding=vecs[k + 1])
                    for k in range(args.episodic)] + [MemoryIn(kind="semantic", text=texts[kind], embedding=vecs[0])]
            with QueryTimer() as qt:
                t0 = time.perf_counter()
                graph.write_memories(vid, c, mems)
                total = time.perf_counter() - t0
            if i < args.warmup:
                continue
            calls[kind].append(total * 1000)
            facts[kind].append(sum(sum(v) for k, v in qt.samples.items() if k.startswith("facts/")) * 1000)
            for k, v in qt.samples.items():
                per_statement.setdefault(f"{kind}:{k}", []).extend(x * 1000 for x in v)
        if checked is None and i >= args.warmup:  # the "new" write did supersede: its slot has one current version
            st = statement_of(texts["new"])
            assert st is not None
            subject, attr = st.slot_key.split(" · ", 1)
            rows = history(graph.ex, vid, subject, attr, 50)
            current = [r["slot_value"] for r in rows if r["current"]]
            superseded = sum(1 for r in rows if r["current"] is False)
            checked = {"slot": st.slot_key, "versions": len(rows), "current": current, "superseded": superseded}
            if current != [st.value] or superseded < 1:
                raise RuntimeError(f"the measured statement did not supersede its slot: {checked}")
    out: dict[str, Any] = {"pairs": args.pairs, "episodic_beside": args.episodic, "superseded_check": checked}
    for kind in ("new", "old"):
        out[kind] = {"write_memories": summary(calls[kind]), "facts_statements": summary(facts[kind])}
    out["ratio_p50"] = out["new"]["write_memories"]["p50_ms"] / out["old"]["write_memories"]["p50_ms"]
    out["ratio_p90"] = out["new"]["write_memories"]["p90_ms"] / out["old"]["write_memories"]["p90_ms"]
    out["added_p50_ms"] = out["new"]["write_memories"]["p50_ms"] - out["old"]["write_memories"]["p50_ms"]
    out["statements"] = {k: {"n": len(v), "p50_ms": float(np.median(v))} for k, v in sorted(per_statement.items())}
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    settings, server = scratch_server(args, MARKER, "bench.facts_cost")
    rng = np.random.default_rng(args.seed)
    result: dict[str, Any] = {"meta": {"git": git_state(), "args": {k: str(v) for k, v in vars(args).items()},
                                       "loadavg_start": os.getloadavg(), "cpus": os.cpu_count()}}
    try:
        ensure_server(settings)
        with MemoryGraph.connect(settings) as graph:
            result["preload"] = pre = preload(graph, args.memories, args.clips_per_source, args.batch_clips, rng)
            log.info("preloaded %d memories in %d sources in %.0f s", pre["memories"], pre["sources"],
                     pre["seconds"])
            with graph.ex.session() as session:
                session.run("CALL db.resampleOutdatedIndexes()").consume()
                session.run("CALL db.awaitIndexes(300)").consume()
                session.run("CALL db.prepareForReplanning()").consume()
            result["counts"] = graph.counts()
            result["plans"] = {
                "facts/slot_assertions": plan_ops(graph, "facts/slot_assertions", {
                    "source_id": "facts-s0000", "slot_keys": ["person 0 · favourite colour"]}),
                "facts/history": plan_ops(graph, "facts/history", {
                    "source_id": "facts-s0000", "subject_key": "person 0", "attribute_key": None, "k": 50})}
            result["ping"] = bench_ping(graph)
            result["measure"] = measure(graph, pre["sources"], args.clips_per_source, args, rng)
            result["meta"]["loadavg_end"] = os.getloadavg()
    finally:
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
        if server is not None and not args.keep:
            server.stop()
            shutil.rmtree(args.home, ignore_errors=True)
    m = result["measure"]
    print(json.dumps({"memories": result["preload"]["memories"], "preload_s": round(result["preload"]["seconds"]),
                      "ping_p50_ms": round(result["ping"]["p50_ms"], 2),
                      "new": m["new"], "old": m["old"], "ratio_p50": round(m["ratio_p50"], 3),
                      "ratio_p90": round(m["ratio_p90"], 3), "added_p50_ms": round(m["added_p50_ms"], 2),
                      "plans": result["plans"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
