"""Benchmark suite: `python -m bench.run --sizes 10000,100000,1000000 --out bench/results/run.json`.

For every size the suite starts its *own* local Neo4j (port 7695 by default, a home of its own that it wipes),
loads a synthetic clustered memory graph plus 10^5 Face entities, builds the product's indexes, measures
search, recall, identity resolution and writes through `MemoryGraph`, and stops the server. Results are written
to the JSON file after every phase, so a run that dies still leaves what it measured. `--report FILE...`
prints the tables of saved runs side by side without measuring anything. `--uri URI` measures on a running server
instead (its database must hold no memories; the segment counts on disk and the restart are left out), and
`--smoke` is the CI size: 1,000 memories, 200 faces, a few calls of each phase (tests/e2e/test_bench_smoke.py).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.faiss_anchor import bench_faiss
from bench.identity_profile import profile_identity, profile_line
from bench.loader import build_indexes, create_constraints, load_corpus, load_faces, memory_ids, wait_for_indexes
from bench.measure import bench_identity, bench_import, bench_ping, bench_recall, bench_search, bench_writes
from bench.report import anchor_table, columns, floor_table, get_path, machine, table, targets_for
from bench.segments import census, compaction_settings, log_lines, process_cmdline
from bench.smoke import add_smoke, add_uri, apply_smoke, server_settings
from bench.synth import CorpusSpec, make_corpus, make_faces, make_queries
from bench.write_profile import commit_floor, floor_lines, profile_writes
from bench.write_profile import report_lines as profile_lines
from m3graph.graphdb.executor import Executor
from m3graph.graphdb.search_plan import Scope, fusion_pool
from m3graph.graphdb.store import MemoryGraph
from m3graph.localserver.server import LocalNeo4j, ensure_server
from m3graph.settings import LocalServer, Settings

REPO = Path(__file__).resolve().parents[1]
MARKER = ".m3graph-bench-home"
log = logging.getLogger("bench.run")


def _share(text: str) -> float:
    """A `search.fusion_share` from the command line, in the setting's own range (model_copy does not validate)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a share is between 0 and 1, not {value}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated memory counts")
    p.add_argument("--out", type=Path, default=None, help="JSON result file (default bench/results/run-<time>.json)")
    p.add_argument("--queries", type=int, default=200, help="search/recall queries per size (half perturbed)")
    p.add_argument("--faces", type=int, default=100_000, help="Face entities loaded for identity resolution")
    p.add_argument("--resolutions", type=int, default=100, help="resolve_faces calls per kind (returning, new)")
    p.add_argument("--write-clips", type=int, default=100, help="clips written through write_memories")
    p.add_argument("--write-budget-s", type=float, default=300.0, help="stop product writes after this long")
    p.add_argument("--write-baseline", action="store_true",
                   help="write each clip also through the write path before issue 40 (bench/session_writes.py), "
                        "alternating, and report both")
    p.add_argument("--batch", type=int, default=5000, help="memories per load transaction")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--home", type=Path, default=REPO / "bench" / "results" / "neo4j-home",
                   help="server home; wiped before each size")
    p.add_argument("--port", type=int, default=7695)
    p.add_argument("--heap-mb", type=int, default=6144)
    p.add_argument("--pagecache-mb", type=int, default=4096)
    p.add_argument("--phases", default="search,recall,faiss,identity,writes,import,profile",
                   help="measurements to run after the load (comma-separated subset of the default); faiss "
                        "needs recall (it is tuned to the graph index's recall@10); profile: the clip write and the "
                        "import, each call split into its statements, begin and commit, and a commit floor by index "
                        "(bench/write_profile.py)")
    p.add_argument("--profile-clips", type=int, default=10, help="profile: clip writes")
    p.add_argument("--profile-imports", type=int, default=2, help="profile: imports")
    p.add_argument("--profile-import-clips", type=int, default=50, help="profile: clips of 20 memories per import")
    p.add_argument("--floor-sizes", type=lambda v: [int(x) for x in v.split(",")], default=[1, 20, 1000],
                   help="profile: nodes a transaction in the commit floor (bench/write_profile.py commit_floor)")
    p.add_argument("--floor-repeats", type=int, default=5, help="profile: commit floor transactions per kind and size")
    p.add_argument("--profile-statements", action="store_true",
                   help="profile: send every statement as PROFILE (db hits, operators; times for attribution only)")
    p.add_argument("--import-videos", type=int, default=4, help="videos written through write_import (bulk path)")
    p.add_argument("--import-clips", type=int, default=250,
                   help="clips of 20 memories per imported video (one transaction per video)")
    p.add_argument("--index-before-load", action="store_true",
                   help="create the indexes on the empty graph (as the product does) instead of after the load")
    p.add_argument("--no-checkpoint-restart", dest="checkpoint_restart", action="store_false",
                   help="skip the server restart after the writes phase that checkpoints the vector index so its "
                        "segments after incremental writes can be counted on disk")
    p.add_argument("--neo4j-version", choices=["auto", "2026", "5.26"], default="auto",
                   help="the launcher's Neo4j line (5.26 for the LTS comparison; auto = 2026.x where a JDK 21+ exists)")
    p.add_argument("--baseline-fusion-share", type=_share, default=None, metavar="SHARE",
                   help="search and recall also run with this search.fusion_share on the same store (0: the "
                        "fixed pool), before and after the defaults, so the default pool's cost is a warm same-store "
                        "pair")
    p.add_argument("--keep", action="store_true", help="leave the last store (and server) in place")
    p.add_argument("--report", type=Path, nargs="+", default=None, help="print tables of saved result files")
    add_uri(p)
    add_smoke(p, "1,000 memories, 200 faces, 10 queries, 5 resolutions, 3 written clips, 1 imported video")
    return apply_smoke(p.parse_args(argv), sizes="1000", queries=10, faces=200, resolutions=5, write_clips=3,
                       write_budget_s=60.0, batch=1000, import_videos=1, import_clips=3, heap_mb=1024,
                       pagecache_mb=512, profile_clips=2, profile_imports=1, profile_import_clips=3,
                       floor_sizes=[1, 2], floor_repeats=1)


def bench_settings(args: argparse.Namespace) -> Settings:
    local = LocalServer(home=args.home, port=args.port, heap_mb=args.heap_mb, pagecache_mb=args.pagecache_mb,
                        build_dir=REPO / ".m3graph" / "launcher-build", tx_timeout_s=7200, startup_timeout_s=600,
                        neo4j_version=args.neo4j_version)
    # Without --uri, neo4j_uri=None explicitly: an exported NEO4J_URI must not send the benchmark to someone else's
    # server (bench.smoke.server_settings).
    return server_settings(args.uri, local, query_timeout_s=3700)


def fresh_home(server: LocalNeo4j) -> None:
    """Stops a server left on the bench home and deletes its store; refuses a directory that is not ours."""
    home = server.home
    if home.exists():
        if not (home / MARKER).exists() and any(home.iterdir()):
            raise SystemExit(f"{home} exists and is not a benchmark home ({MARKER} missing); choose --home")
        server.stop()
        shutil.rmtree(home)
    home.mkdir(parents=True)
    (home / MARKER).write_text("created by bench.run; deleted and recreated for every size\n")


def require_empty(ex: Executor, uri: str) -> None:
    """On a server the benchmark did not start: refuse a database that already holds memories (the recall and
    agreement figures assume the synthetic corpus is all there is)."""
    n = sum(int(r["n"] or 0) for r in ex.read("graph/counts", source_id=None) if r["label"] == "Memory")
    if n:
        raise SystemExit(f"the database at {uri} holds {n} memories; --uri needs an empty one")


def git_state() -> dict[str, Any]:
    """The product code measured: HEAD and the files under m3graph/ that differ from it."""
    def git(*cmd: str) -> str:
        try:
            return subprocess.run(["git", *cmd], cwd=REPO, capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return ""
    return {"head": git("rev-parse", "HEAD").strip() or None,
            "dirty": [line[3:] for line in git("status", "--porcelain", "m3graph").splitlines()]}


def vector_segments(ex: Executor, home: Path, database: str) -> dict[str, int]:
    """Lucene segments per vector index: a query searches every segment, so its cost grows with their number."""
    root = home / "data" / "databases" / database / "schema" / "index"
    out = {}
    for row in ex.read("bench/vector_index_ids"):
        out[row["name"]] = sum(1 for d in root.glob(f"vector-*/{row['id']}") for _ in d.rglob("*.si"))
    return out


def index_ids(ex: Executor) -> dict[str, int]:
    return {row["name"]: int(row["id"]) for row in ex.read("bench/vector_index_ids")}


def segment_census(ids: dict[str, int], home: Path, database: str) -> dict[str, dict[str, Any]]:
    """Committed segments and .si files per vector index (bench/segments.py says how they are counted)."""
    root = home / "data" / "databases" / database / "schema" / "index"
    return {name: census(root, index_id) for name, index_id in ids.items()}


def checkpointed_census(settings: Settings, ex: Executor, graph: MemoryGraph, vids: dict[str, int]
                        ) -> dict[str, Any]:
    """Segments as the live index has them: stop (a clean stop checkpoints every index), count, start again.

    Why a restart: Neo4j 2026 keeps the small segments of incremental writes out of the on-disk commit until a
    checkpoint (the files under schema/index still show the bulk commit), and `db.checkpoint()` is a DBMS
    procedure that the named-query file tests do not admit. The store's page cache is cold after the restart.
    """
    server = LocalNeo4j(settings)
    t0 = time.perf_counter()
    server.stop()
    out: dict[str, Any] = segment_census(vids, settings.local.home.resolve(), settings.neo4j_database)
    ensure_server(settings)
    for attempt in range(20):  # the drivers' pooled connections died with the old process
        try:
            ex.read("bench/ping")
            graph.ex.read("bench/ping")
            break
        except Exception:  # noqa: BLE001 - any connection error: wait and retry
            if attempt == 19:
                raise
            time.sleep(1.0)
    out["_restart_s"] = time.perf_counter() - t0
    return out


def floor(graph: MemoryGraph) -> dict[str, Any]:
    """One `RETURN 1` floor measurement with the load average beside it: every figure is read against both."""
    return bench_ping(graph) | {"loadavg": os.getloadavg()}


def dir_gb(path: Path) -> float | None:
    try:
        out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return int(out.split()[0]) / 2**20


class Results:
    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path = path
        self.data: dict[str, Any] = {"meta": meta, "sizes": {}}

    def size(self, n: int) -> dict[str, Any]:
        return self.data["sizes"].setdefault(str(n), {"n": n})

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str))
        tmp.replace(self.path)


def run_size(n: int, args: argparse.Namespace, results: Results) -> None:
    rec = results.size(n)
    settings = bench_settings(args)
    server = LocalNeo4j(settings) if settings.uses_local_server else None  # None: --uri, a server not ours
    ex: Executor | None = None
    graph: MemoryGraph | None = None
    ids: dict[str, int] = {}
    try:
        status = None
        if server is not None:
            fresh_home(server)
            t0 = time.perf_counter()
            status = ensure_server(settings)
            rec["server_start_s"] = time.perf_counter() - t0
        rec["settings"] = {"search": settings.search.model_dump(),
                           "vector_index": settings.vector_index.model_dump(),
                           "identity": settings.identity.model_dump(), "heap_mb": args.heap_mb,
                           "pagecache_mb": args.pagecache_mb}
        log.info("size %d: server %s up (pid %s) after %.1f s", n, settings.bolt_uri, status and status.pid,
                 rec.get("server_start_s", 0.0))
        ex = Executor.connect(settings)
        if server is None:
            require_empty(ex, settings.bolt_uri)
        graph = measure_size(n, args, settings, ex, rec, results)
        if server is not None:
            st = server.status()
            rec["server_rss_gb"] = st.rss_mb / 1024 if st.rss_mb else None
        rec["counts"] = graph.counts()
        ids = index_ids(ex)
        rec["complete"] = True
    except BaseException as exc:
        rec["error"] = f"{type(exc).__name__}: {exc}"
        log.exception("size %d failed", n)
        raise
    finally:
        results.save()
        if graph is not None:
            graph.close()
        if ex is not None:
            ex.close()
        if server is not None and server.home.joinpath(MARKER).exists():
            if not args.keep:
                server.stop()
                if ids:  # the shutdown checkpoint committed every index: on-disk counts are now the live ones
                    rec["indexes"]["segments_after_stop"] = segment_census(ids, server.home,
                                                                           settings.neo4j_database)
            rec["store_gb"] = dir_gb(server.home)
            if not args.keep:
                shutil.rmtree(server.home, ignore_errors=True)
        results.save()


def measure_size(n: int, args: argparse.Namespace, settings: Settings, ex: Executor, rec: dict[str, Any],
                 results: Results) -> MemoryGraph:
    """Load, index and measure one size on a running, empty server; returns the open MemoryGraph."""
    rec["neo4j"] = ex.read("bench/server_info")
    create_constraints(ex)
    spec = CorpusSpec(n=n, seed=args.seed)
    t0 = time.perf_counter()
    corpus = make_corpus(spec)
    queries = make_queries(corpus, args.queries, args.seed + 1)
    rec["corpus"] = {"generate_s": time.perf_counter() - t0, "topics": spec.n_topics, "dim": spec.dim,
                     "clips_per_video": spec.clips_per_video, "videos": corpus.n_videos,
                     "clips": corpus.n_clips, "queries": args.queries}
    if args.index_before_load:  # how the product builds its index: migrations run before any data exists
        rec["indexes"] = build_indexes(ex, settings) | {"mode": "before_load"}
    log.info("size %d: loading %d memories in %d clips of %d videos", n, n, corpus.n_clips, corpus.n_videos)
    rec["load"] = load_corpus(ex, corpus, settings, batch=args.batch).summary()
    rec["load"]["loadavg_after"] = os.getloadavg()
    log.info("size %d: loaded in %.1f s (%.0f nodes/s)", n, rec["load"]["seconds"], rec["load"]["nodes_per_s"])
    results.save()
    phases = {p.strip() for p in args.phases.split(",") if p.strip()}
    rec["phases"] = sorted(phases)
    want_faces = args.faces and args.resolutions and "identity" in phases
    faces = make_faces(args.faces, settings.identity.face_dim, args.seed + 2,
                       settings.face_match_threshold) if want_faces else None
    if faces is not None:
        rec["faces"] = load_faces(ex, faces)
        log.info("size %d: %d faces loaded in %.1f s", n, faces.n, rec["faces"]["seconds"])
    if args.index_before_load:
        rec["indexes"]["wait_after_load_s"] = wait_for_indexes(ex)
    else:
        rec["indexes"] = build_indexes(ex, settings) | {"mode": "after_load"}
    # The store's files and the server process are only ours to read (and restart) on the benchmark's own server.
    home = settings.local.home.resolve() if settings.uses_local_server else None
    vids = index_ids(ex)

    def on_disk(key: str) -> None:
        if home is not None:
            rec["indexes"][key] = segment_census(vids, home, settings.neo4j_database)

    if home is not None:
        rec["indexes"]["segments_after_build"] = vector_segments(ex, home, settings.neo4j_database)
        pid = LocalNeo4j(settings).status().pid
        rec["indexes"]["compaction"] = compaction_settings(process_cmdline(pid), ex.read("bench/vector_settings")) | {
            "log_lines": log_lines(home)}
    on_disk("census_after_build")
    results.save()
    graph = MemoryGraph.connect(settings)  # the product entry point; migrations are all recorded by now
    rec["ping"] = bench_ping(graph)
    rec["floor"] = {"start": floor(graph)}
    rec["loadavg"] = {"before_search": os.getloadavg()}
    if args.baseline_fusion_share is not None and phases & {"search", "recall"}:
        base = settings.model_copy(update={"search": settings.search.model_copy(
            update={"fusion_share": args.baseline_fusion_share})})
        # Baseline, defaults, baseline again: the first pass on a fresh server runs cold (at 10^5 the same
        # statements measured 27.7 ms p50 first and 15.0 ms right after), so the pair to compare is the last two.
        baseline = MemoryGraph.connect(base)
        try:
            rec["baseline_pool_cold"] = search_and_recall(baseline, corpus, queries, phases, n, results)
            rec.update(search_and_recall(graph, corpus, queries, phases, n, results))
            rec["baseline_pool"] = search_and_recall(baseline, corpus, queries, phases, n, results)
        finally:
            baseline.close()
        rec["loadavg"]["after_baseline_pool"] = os.getloadavg()
    else:
        rec.update(search_and_recall(graph, corpus, queries, phases, n, results))
    if "faiss" in phases:
        cfg, vcfg = settings.search, settings.vector_index
        rec["faiss"] = bench_faiss(corpus, queries, get_path(rec, "recall.index_topk.all"), vcfg.hnsw_m,
                                   vcfg.ef_construction, cfg.clip_topk, cfg.overfetch)
        rec["loadavg"]["after_faiss"] = os.getloadavg()
        if "topk" in rec["faiss"]:
            log.info("size %d: faiss efSearch %d recall %.3f top-10 p50 %.3f ms", n, rec["faiss"]["ef_search"],
                     rec["faiss"]["recall"], rec["faiss"]["topk"]["p50_ms"])
        results.save()
    if faces is not None:
        rec["identity"] = bench_identity(graph, faces, args.resolutions, args.seed + 3)
        log.info("size %d: resolve_faces p50 %.2f ms", n, rec["identity"]["all"]["p50_ms"])
        # Where the time goes: begin, each statement (client, server), commit, per kind of call (issue 40).
        rec["identity"]["profile"] = profile_identity(graph, faces, max(3, args.resolutions // 4), args.seed + 6)
        log.info("size %d: identity profile %s", n, profile_line(rec["identity"]["profile"]))
        results.save()
    if args.write_clips and "writes" in phases:
        rec["writes"] = bench_writes(graph, corpus, args.write_clips, args.seed + 4, args.write_budget_s,
                                     baseline=args.write_baseline)
        log.info("size %d: write_memories p50 %.1f ms per clip", n, rec["writes"]["write_memories"]["p50_ms"])
        if "write_memories_earlier" in rec["writes"]:
            log.info("size %d: write_memories before issue 40 p50 %.1f ms per clip (earlier/current %.2f)", n,
                     rec["writes"]["write_memories_earlier"]["p50_ms"], rec["writes"]["earlier_over_current_p50"])
        on_disk("census_after_writes")
        if args.checkpoint_restart and home is not None:
            rec["indexes"]["census_after_writes_checkpointed"] = checkpointed_census(settings, ex, graph, vids)
        results.save()
    if args.import_videos and args.import_clips and "import" in phases:
        rec["import"] = bench_import(graph, corpus, args.import_videos, args.import_clips, args.seed + 5)
        log.info("size %d: write_import %.0f memories/s", n, rec["import"]["memories_per_s"] or 0.0)
        on_disk("census_after_import")
        results.save()
    if "profile" in phases and (args.profile_clips or args.profile_imports):
        rec["profile"] = profile_writes(graph, args.profile_clips, args.profile_imports, args.profile_import_clips,
                                        args.seed + 7, profile=args.profile_statements)
        rec["profile"]["commit_floor"] = commit_floor(graph, args.floor_sizes, args.floor_repeats, args.seed + 8)
        for line in profile_lines(rec["profile"]) + floor_lines(rec["profile"]["commit_floor"]):
            log.info("size %d: %s", n, line)
        results.save()
    rec["floor"]["end"] = floor(graph)
    rec["loadavg"]["end"] = os.getloadavg()
    if home is not None:
        rec["indexes"]["segments_at_end"] = vector_segments(ex, home, settings.neo4j_database)
    return graph


def search_and_recall(graph: MemoryGraph, corpus: Any, queries: Any, phases: set[str], n: int, results: Results
                      ) -> dict[str, Any]:
    """The search and recall phases on one graph, with the fusion pool its settings give a whole-store search (why
    a second graph: the pool is a setting, and a same-store pair is the only fair comparison of two pools)."""
    out: dict[str, Any] = {"fusion_pool": fusion_pool(graph.settings.search, Scope(), graph.search),
                           "fusion_share": graph.settings.search.fusion_share}
    if "search" in phases:
        out["search"] = bench_search(graph, corpus, queries)
        log.info("size %d: search_clip p50 %.2f ms with fusion pool %d", n,
                 out["search"]["global"]["product"]["p50_ms"], out["fusion_pool"])
        results.save()
    if "recall" in phases:
        ids = memory_ids(corpus)
        out["recall"] = bench_recall(graph, corpus, queries, ids)
        log.info("size %d: recall@10 index %.3f, search_node %.3f (fusion pool %d)", n,
                 out["recall"]["index_topk"]["all"], out["recall"]["search_node"]["all"], out["fusion_pool"])
    return out


def with_driver(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The run's size records, each told whether the driver packed parameters in Rust or in Python."""
    rust = bool(data["meta"]["machine"].get("driver_rust_packstream"))
    return {k: v | {"driver_rust": rust} for k, v in data["sizes"].items()}


def print_tables(runs: list[tuple[str, dict[str, dict[str, Any]]]]) -> None:
    cols = columns(runs)
    print(table(cols))
    print()
    print(anchor_table(cols))
    print()
    print(floor_table(cols))
    print()
    print(targets_for(cols))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("neo4j").setLevel(logging.WARNING)
    if args.report:
        runs = []
        for path in args.report:
            data = json.loads(path.read_text())
            runs.append((path.stem, with_driver(data)))
        print_tables(runs)
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.uri and len(sizes) > 1:  # nothing wipes a server the benchmark does not own between sizes
        raise SystemExit("--uri measures one size (the database must be empty); run once per size")
    out = args.out or REPO / "bench" / "results" / f"run-{time.strftime('%Y%m%d-%H%M%S')}.json"
    meta = {"command": " ".join(["python -m bench.run", *(argv if argv is not None else sys.argv[1:])]),
            "python_executable": sys.executable, "git": git_state(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine(), "args": vars(args)}
    results = Results(out, meta)
    results.save()
    failed = False
    for n in sizes:
        try:
            run_size(n, args, results)
        except Exception:  # the next size may still fit; the error is in the JSON and the log
            failed = True
    results.data["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    results.save()
    print_tables([(out.stem, with_driver(results.data))])
    print(f"\nresults: {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
