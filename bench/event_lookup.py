"""A question's event looked up across every source: `facts/anchor_versions` before and after migration 19.

Why: "Where did Nora work when she lived in Lisbon?" is read as "as of when Lisbon held" (reasoning/event_as_of.py),
which first finds the facts whose value is one of the clause's names (up to 60 word spans). Asked without a source
(MCP, `m3graph ask` over everything), the earlier statement looked every name up in every source by key
(`source|name`): sources × names index seeks, 60,000 at 1,000 sources, and it read only the first 1,000 sources.
The current one seeks `Thing.name_key` (the normalised name alone, migration 19) once per name. Issue 40 asks what
grows with what; this measures it.

On its own scratch server (or `--uri`), for each number of sources in `--sources` (cumulative: sources are added,
never rewritten), each with `--things` named things of its own and one slotted fact naming each, it runs both
statements unscoped with `--names` names, as the product does (`_MAX_VERSIONS` facts at most): one the last source
uses, the others no source uses (the clause's other word spans, "she", "lived in", ...). After each size the index
statistics are resampled and plans dropped, so each size is planned on its own data. It reports per statement the
db hits (PROFILE) and the p50 / p95 latency of `--repeats` calls through the product's executor, beside the load
average, and whether each returns the one fact (the earlier statement reads the first 1,000 sources only: past
them it misses a fact of a later source; the run fails when the current one misses it, or the earlier one within
its reach).

    python -m bench.event_lookup --sources 10,100,1000,10000 --repeats 30

`--smoke` (CI): 3 sources, 3 repeats.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
from functools import partial
from pathlib import Path
from typing import Any

from bench.measure import summary, timed
from bench.run import REPO, git_state
from bench.scratch_home import scratch_server
from bench.smoke import add_smoke, add_uri, apply_smoke
from bench.write_profile import _operators, profile_text
from m3graph.cypher import query
from m3graph.graphdb.store import MemoryGraph
from m3graph.localserver.server import ensure_server
from m3graph.reasoning.event_as_of import _MAX_VERSIONS

log = logging.getLogger("bench.event_lookup")
MARKER = ".m3graph-event-lookup-home"
PREFIX = "bench-el-"
STATEMENTS = {"earlier": "bench/anchor_versions_by_source", "current": "facts/anchor_versions"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.event_lookup", description=__doc__.splitlines()[0])
    p.add_argument("--sources", default="10,100,1000", help="comma-separated numbers of sources (cumulative)")
    p.add_argument("--things", type=int, default=20, help="named things (each with one fact) per source")
    p.add_argument("--names", type=int, default=60, help="names the clause gives (the product reads up to 60)")
    p.add_argument("--repeats", type=int, default=30, help="timed calls per statement and size")
    p.add_argument("--home", type=Path, default=REPO / ".m3graph" / "bench-event-lookup" / "neo4j")
    p.add_argument("--port", type=int, default=7698)
    p.add_argument("--heap-mb", type=int, default=1024)
    p.add_argument("--pagecache-mb", type=int, default=512)
    p.add_argument("--out", type=Path, default=None, help="JSON results")
    add_uri(p)
    add_smoke(p, "3 sources, 3 repeats")
    return apply_smoke(p.parse_args(argv), sources="3", repeats=3)


def measure_size(graph: MemoryGraph, sources: int, n_names: int, things: int, repeats: int) -> dict[str, Any]:
    """Both statements at this number of sources: db hits, latency, and whether both find the one fact."""
    names = [f"word {i}" for i in range(n_names - 1)] + [f"place {(sources - 1) * things}"]  # the last source's
    params = {"sources": None, "names": names, "k": _MAX_VERSIONS}
    out: dict[str, Any] = {"sources": sources, "names": len(names), "loadavg": os.getloadavg()}
    for which, name in STATEMENTS.items():
        with graph.ex.session() as session:
            plan = session.run(profile_text(query(name).text), params).consume().profile or {}
        for _ in range(3):  # planned and cached before timing
            graph.ex.read(name, **params)
        times = [timed(partial(graph.ex.read, name, **params))[0] for _ in range(repeats)]
        out[which] = {"db_hits": sum(op["db_hits"] for op in _operators(plan))} | summary(times)
    want = [f"{PREFIX}{sources - 1}/{names[-1]}"]  # past 1,000 sources the earlier statement cannot reach it
    out["found"] = {w: [r["memory_id"] for r in graph.ex.read(n, **params)] == want for w, n in STATEMENTS.items()}
    out["p50_ratio"] = out["earlier"]["p50_ms"] / out["current"]["p50_ms"]
    return out


def delete_all(graph: MemoryGraph) -> None:
    """What this benchmark wrote, a few thousand nodes a transaction."""
    while graph.ex.write("bench/event_lookup_delete", prefix=PREFIX, batch=5000)[0]["deleted"]:
        pass


def report_lines(results: list[dict[str, Any]]) -> list[str]:
    lines = ["| sources | names | earlier: db hits, p50 / p95 ms | current: db hits, p50 / p95 ms | earlier / current "
             "p50 | fact found: earlier, current | load |", "|---|---|---|---|---|---|---|"]
    for r in results:
        e, c = r["earlier"], r["current"]
        lines.append(f"| {r['sources']} | {r['names']} | {e['db_hits']}, {e['p50_ms']:.1f} / {e['p95_ms']:.1f} | "
                     f"{c['db_hits']}, {c['p50_ms']:.1f} / {c['p95_ms']:.1f} | {r['p50_ratio']:.1f}× | "
                     f"{'yes' if r['found']['earlier'] else 'no'}, {'yes' if r['found']['current'] else 'no'} | "
                     f"{r['loadavg'][0]:.1f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    sizes = sorted(int(s) for s in args.sources.split(",") if s.strip())
    settings, server = scratch_server(args, MARKER, "bench.event_lookup")
    results: list[dict[str, Any]] = []
    try:
        ensure_server(settings)
        with MemoryGraph.connect(settings) as graph:
            delete_all(graph)
            have = 0
            try:
                for n in sizes:
                    for first in range(have, n, 100):  # a hundred sources a transaction
                        graph.ex.write("bench/event_lookup_populate", first=first, last=min(n, first + 100),
                                       things=args.things, prefix=PREFIX)
                    have = max(have, n)
                    graph.ex.schema("schema/await_indexes", timeout_s=300)
                    with graph.ex.session() as session:  # plans costed on this size's statistics
                        session.run("CALL db.resampleOutdatedIndexes()").consume()
                        session.run("CALL db.awaitIndexes(300)").consume()
                        session.run("CALL db.prepareForReplanning()").consume()
                    results.append(measure_size(graph, n, args.names, args.things, args.repeats))
                    log.info("%d sources: %s", n, json.dumps(results[-1]))
            finally:
                delete_all(graph)
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(args.home, ignore_errors=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"git": git_state(), "results": results}, indent=1), encoding="utf-8")
    print("\n".join(report_lines(results)))
    return 0 if all(r["found"]["current"] and (r["found"]["earlier"] or r["sources"] > 1000) for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
