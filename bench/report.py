"""Machine facts and the markdown tables printed at the end of a run (or rebuilt from saved JSON files)."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

TARGETS = {
    "search_p50_ms": 10.0,
    "speedup": 50.0,
    "recall": 0.95,
    "resolve_ms": 5.0,
    "write_nodes_per_s": 5000.0,
    "import_memories_per_s": 5000.0,  # issue 12: bulk ingestion with the vector index present
    "write_clip_ms": 20.0,  # issue 12: write_memories of one clip of 20 memories, p50
}


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal"))
    except (OSError, StopIteration, ValueError):
        mem_kb = 0
    try:
        from neo4j._codec.packstream import v1

        rust = v1._rust_pack is not None
    except (ImportError, AttributeError):
        rust = False
    return {"cpu": cpu, "cores": os.cpu_count(), "mem_gb": round(mem_kb / 2**20, 1),
            "loadavg_at_start": os.getloadavg(), "python": platform.python_version(),
            "numpy": np.__version__, "neo4j_driver": metadata.version("neo4j"), "driver_rust_packstream": rust,
            "platform": platform.platform()}


def get_path(record: dict[str, Any], path: str) -> Any:
    """The value at a dotted path of a result record, or None where any part is missing."""
    cur: Any = record
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _pair(record: dict[str, Any], path: str, digits: int = 1) -> str:
    p50, p95 = get_path(record, f"{path}.p50_ms"), get_path(record, f"{path}.p95_ms")
    return "–" if p50 is None else f"{_fmt(p50, digits)} / {_fmt(p95, digits)}"


def _loadavg(record: dict[str, Any]) -> str:
    before, end = get_path(record, "loadavg.before_search"), get_path(record, "loadavg.end")
    if before is None:
        return "–"
    return f"{before[0]:.1f} / " + (f"{end[0]:.1f}" if end else "–")


def _baseline(record: dict[str, Any], path: str, recall: str | None = None, key: str = "baseline_pool") -> str:
    """A figure of the run's baseline pool (bench.run `--baseline-fusion-share`), with that pool; – without one."""
    base = record.get(key)
    if not base:
        return "–"
    text = f"{_pair(base, path, 2)} (pool {_fmt(base.get('fusion_pool'))})"
    return text + (f"; {_fmt(get_path(base, recall), 3)}" if recall else "")


Row = tuple[str, Callable[[dict[str, Any]], str]]

ROWS: list[Row] = [
    ("driver parameter packing", lambda r: "Rust ext" if r.get("driver_rust") else "pure Python"),
    ("videos / clips", lambda r: f"{_fmt(get_path(r, 'load.videos'))} / {_fmt(get_path(r, 'load.clips'))}"),
    ("load: seconds", lambda r: _fmt(get_path(r, "load.seconds"))),
    ("load: nodes/s (memories+clips+videos)", lambda r: _fmt(get_path(r, "load.nodes_per_s"), 0)),
    ("load: memories/s", lambda r: _fmt(get_path(r, "load.memories_per_s"), 0)),
    ("indexes created", lambda r: _fmt(get_path(r, "indexes.mode"))),
    ("range + full-text index build, s", lambda r: _fmt(get_path(r, "indexes.range_fulltext_s"))),
    ("memory vector index build, s", lambda r: _fmt(get_path(r, "indexes.memory_embedding_s"))),
    ("memory vector index: Lucene segments after build", lambda r: _fmt(
        get_path(r, "indexes.segments_after_build.memory_embedding"))),
    ("round trip `RETURN 1`: p50 / p95 ms", lambda r: _pair(r, "ping", 2)),
    ("load average (1 min) before search / at end", lambda r: _loadavg(r)),
    ("fusion pool of a whole-store search (memories per ranking)", lambda r: _fmt(get_path(r, "fusion_pool"))),
    ("search_clip, no filter (index): p50 / p95 ms", lambda r: _pair(r, "search.global.product", 2)),
    ("  same store, baseline pool (`--baseline-fusion-share`), after", lambda r: _baseline(r, "search.global.product")),
    ("  same store, baseline pool, before (the server's first pass)",
     lambda r: _baseline(r, "search.global.product", key="baseline_pool_cold")),
    ("linear scan (numpy), same queries: p50 / p95 ms", lambda r: _pair(r, "search.global.linear_scan", 2)),
    ("speed-up, p50 scan / p50 search_clip", lambda r: _fmt(get_path(r, "search.global.speedup_p50")) + "×"),
    ("rank_clips only (no memory fetch): p50 / p95 ms", lambda r: _pair(r, "search.rank_global.product", 2)),
    ("speed-up, p50 scan / p50 rank_clips", lambda r: _fmt(get_path(r, "search.rank_global.speedup_p50")) + "×"),
    ("top-2 clips equal to the scan's (share of queries)", lambda r: _fmt(
        get_path(r, "search.global.agreement.same_clips"), 2)),
    ("search_clip, half the videos: path", lambda r: _fmt(get_path(r, "search.many_videos.path"))),
    ("search_clip, half the videos: p50 / p95 ms", lambda r: _pair(r, "search.many_videos.product", 2)),
    ("scan of half the videos: p50 / p95 ms", lambda r: _pair(r, "search.many_videos.linear_scan", 2)),
    ("  of which count_candidates: p50 ms", lambda r: _fmt(get_path(r, "search.many_videos.count_candidates.p50_ms"),
                                                           2)),
    ("search_clip, one video (exact scan): p50 / p95 ms", lambda r: _pair(r, "search.one_video.product", 2)),
    ("numpy scan of one video: p50 / p95 ms", lambda r: _pair(r, "search.one_video.linear_scan", 3)),
    ("recall@10, raw index top-10", lambda r: _fmt(get_path(r, "recall.index_topk.all"), 3)),
    ("  perturbed / fresh queries", lambda r: f"{_fmt(get_path(r, 'recall.index_topk.perturbed'), 3)} / "
                                              f"{_fmt(get_path(r, 'recall.index_topk.fresh'), 3)}"),
    ("recall@10, search_node(k=10)", lambda r: _fmt(get_path(r, "recall.search_node.all"), 3)),
    ("search_node(k=10): p50 / p95 ms", lambda r: _pair(r, "recall.search_node_latency", 2)),
    ("  same store, baseline pool: p50 / p95 ms; recall@10", lambda r: _baseline(r, "recall.search_node_latency",
                                                                                   "recall.search_node.all")),
    ("resolve_faces, 1 cluster × 3 obs: p50 / p95 ms", lambda r: _pair(r, "identity.all", 2)),
    ("  returning person: p50 / p95 ms", lambda r: _pair(r, "identity.returning", 2)),
    ("  new person: p50 / p95 ms", lambda r: _pair(r, "identity.new", 2)),
    ("  returning matched to their Face / new created",
     lambda r: f"{_fmt(get_path(r, 'identity.returning_matched_right'), 2)} / "
     f"{_fmt(get_path(r, 'identity.new_created'), 2)}"),
    ("face load: entities/s (+ one Character each)", lambda r: _fmt(get_path(r, "faces.nodes_per_s"), 0)),
    ("write_memories per clip (20 memories): p50 / p95 ms", lambda r: _pair(r, "writes.write_memories", 1)),
    ("write_memories: memories/s", lambda r: _fmt(get_path(r, "writes.memories_per_s"), 0)),
    ("  of which memory/clip_state: p50 ms", lambda r: _fmt(get_path(r, "writes.clip_state_query.p50_ms"), 1)),
    ("store size on disk, GB", lambda r: _fmt(get_path(r, "store_gb"), 2)),
    ("Neo4j RSS after the run, GB", lambda r: _fmt(get_path(r, "server_rss_gb"), 1)),
    # issue 12 (absent from older result files, shown as –)
    ("`RETURN 1` at the end of the run: p50 / p95 ms", lambda r: _pair(r, "floor.end", 2)),
    ("launcher's vector compaction setting", lambda r: _compaction(r)),
    ("memory vector index segments, committed / .si files: after build", lambda r: _census(r, "build")),
    ("  after write_memories, on disk while running", lambda r: _census(r, "writes")),
    ("  after write_memories, after a checkpointing restart", lambda r: _census(r, "writes_checkpointed")),
    ("  after write_import", lambda r: _census(r, "import")),
    ("  after server stop (checkpointed)", lambda r: _census_stop(r)),
    ("write_import (bulk, index present): memories/s", lambda r: _fmt(get_path(r, "import.memories_per_s"), 0)),
    ("write_import: s per transaction (video) p50", lambda r: _fmt(_seconds(get_path(r, "import.transaction.p50_ms")),
                                                                    2) + _per_video(r)),
    ("FAISS HNSW: build s", lambda r: _fmt(get_path(r, "faiss.build_s"))),
    ("FAISS HNSW: efSearch / its recall@10", lambda r: f"{_fmt(get_path(r, 'faiss.ef_search'))} / "
                                                        f"{_fmt(get_path(r, 'faiss.recall'), 3)}"),
    ("FAISS top-10: p50 / p95 ms", lambda r: _pair(r, "faiss.topk", 3)),
    ("FAISS clip ranking (search_clip's answer): p50 / p95 ms", lambda r: _pair(r, "faiss.clip_rank", 3)),
]


def _seconds(ms: Any) -> float | None:
    return None if ms is None else ms / 1000.0


def _per_video(r: dict[str, Any]) -> str:
    n = get_path(r, "import.clips_per_video")
    per = get_path(r, "import.memories_per_clip")
    return "" if n is None or per is None else f" ({n * per:,} memories)"


def _compaction(r: dict[str, Any]) -> str:
    passed = get_path(r, "indexes.compaction.launcher_args")
    if passed is None:
        return "–"
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in passed.items()) or "none"


def _census(r: dict[str, Any], when: str) -> str:
    c = get_path(r, f"indexes.census_after_{when}.memory_embedding")
    return "–" if c is None else f"{_fmt(c.get('committed'))} / {_fmt(c.get('si_files'))}"


def _census_stop(r: dict[str, Any]) -> str:
    c = get_path(r, "indexes.segments_after_stop.memory_embedding")
    return "–" if c is None else f"{_fmt(c.get('committed'))} / {_fmt(c.get('si_files'))}"


def _p50(r: dict[str, Any], path: str) -> float | None:
    v = get_path(r, f"{path}.p50_ms")
    return float(v) if v is not None else None


def _ratio(a: float | None, b: float | None, digits: int = 1) -> str:
    return "–" if a is None or b is None or b <= 0 else f"{a / b:,.{digits}f}×"


def _sum(*values: float | None) -> float | None:
    return None if any(v is None for v in values) else float(sum(v for v in values if v is not None))


ANCHOR_ROWS: list[Row] = [
    ("`RETURN 1` floor p50 ms (start / end)", lambda r: f"{_fmt(_p50(r, 'ping'), 2)} / "
                                                         f"{_fmt(_p50(r, 'floor.end'), 2)}"),
    ("load average, 1 min (before search / end)", lambda r: _loadavg(r)),
    ("recall@10: graph index / FAISS at its efSearch", lambda r: f"{_fmt(get_path(r, 'recall.index_topk.all'), 3)} / "
                                                                  f"{_fmt(get_path(r, 'faiss.recall'), 3)} "
                                                                  f"(ef {_fmt(get_path(r, 'faiss.ef_search'))})"),
    ("graph raw index top-10 (bench/index_topk) p50 ms", lambda r: _fmt(_p50(r, "recall.index_topk_latency"), 2)),
    ("FAISS HNSW top-10 p50 ms", lambda r: _fmt(_p50(r, "faiss.topk"), 3)),
    ("  graph top-10 / (FAISS top-10 + `RETURN 1`)", lambda r: _ratio(
        _p50(r, "recall.index_topk_latency"), _sum(_p50(r, "faiss.topk"), _p50(r, "ping")), 2)),
    ("search_clip, no filter p50 ms", lambda r: _fmt(_p50(r, "search.global.product"), 2)),
    ("numpy exact scan, clip ranking p50 ms", lambda r: _fmt(_p50(r, "search.global.linear_scan"), 2)),
    ("FAISS clip ranking p50 ms", lambda r: _fmt(_p50(r, "faiss.clip_rank"), 3)),
    ("  search_clip / (FAISS top-10 + `RETURN 1`)", lambda r: _ratio(
        _p50(r, "search.global.product"), _sum(_p50(r, "faiss.topk"), _p50(r, "ping")), 2)),
    ("  search_clip / (FAISS clip ranking + `RETURN 1`)", lambda r: _ratio(
        _p50(r, "search.global.product"), _sum(_p50(r, "faiss.clip_rank"), _p50(r, "ping")), 2)),
    ("  numpy scan / FAISS top-10", lambda r: _ratio(_p50(r, "search.global.linear_scan"), _p50(r, "faiss.topk"))),
    ("  numpy scan / search_clip", lambda r: _ratio(_p50(r, "search.global.linear_scan"),
                                                    _p50(r, "search.global.product"), 2)),
]

FLOOR_FIGURES: list[tuple[str, str]] = [
    ("search_clip, no filter", "search.global.product"),
    ("rank_clips", "search.rank_global.product"),
    ("search_clip, half the videos", "search.many_videos.product"),
    ("search_clip, one video", "search.one_video.product"),
    ("graph raw index top-10", "recall.index_topk_latency"),
    ("search_node(k=10)", "recall.search_node_latency"),
    ("resolve_faces", "identity.all"),
    ("upsert_clip", "writes.upsert_clip"),
    ("write_memories (20 memories)", "writes.write_memories"),
    ("write_import, one video transaction", "import.transaction"),
    ("numpy scan, clip ranking", "search.global.linear_scan"),
    ("FAISS top-10", "faiss.topk"),
    ("FAISS clip ranking", "faiss.clip_rank"),
]


def anchor_table(cols: dict[str, dict[str, Any]]) -> str:
    """Graph vs numpy vs FAISS (issue 12): medians and the ratios that place the graph against the anchors."""
    lines = ["| graph vs numpy vs FAISS | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for label, fn in ANCHOR_ROWS:
        lines.append(f"| {label} | " + " | ".join(fn(r) for r in cols.values()) + " |")
    return "\n".join(lines)


def floor_table(cols: dict[str, dict[str, Any]]) -> str:
    """Every p50 as ms and as a multiple of the same run's `RETURN 1` p50 (the floor under every graph call)."""
    lines = ["| p50, ms (× `RETURN 1`) | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for label, path in FLOOR_FIGURES:
        cells = []
        for r in cols.values():
            v, f = _p50(r, path), _p50(r, "ping")
            digits = 1 if v is None or f is None or v >= f else 3  # FAISS is a small fraction of the floor
            cells.append("–" if v is None else f"{_fmt(v, 2 if v >= 0.1 else 3)} ({_ratio(v, f, digits)})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def columns(runs: list[tuple[str, dict[str, dict[str, Any]]]]) -> dict[str, dict[str, Any]]:
    """Column header → size record; a size measured in several runs gets the run's name in its header."""
    seen: dict[str, int] = {}
    for _, sizes in runs:
        for key in sizes:
            seen[key] = seen.get(key, 0) + 1
    out: dict[str, dict[str, Any]] = {}
    for name, sizes in runs:
        for key in sorted(sizes, key=int):
            head = f"{int(key):,} memories"
            out[head if seen[key] == 1 else f"{head} ({name})"] = sizes[key]
    return out


def table(cols: dict[str, dict[str, Any]]) -> str:
    lines = ["| measure | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for label, fn in ROWS:
        lines.append(f"| {label} | " + " | ".join(fn(r) for r in cols.values()) + " |")
    return "\n".join(lines)


def targets_for(cols: dict[str, dict[str, Any]]) -> str:
    """The targets checked on the column with the most memories."""
    if not cols:
        return ""
    head = max(cols, key=lambda h: cols[h].get("n", 0))
    return targets({str(cols[head].get("n", 0)): cols[head]}, head)


def targets(sizes: dict[str, dict[str, Any]], title: str | None = None) -> str:
    """Each target checked at the largest size measured."""
    if not sizes:
        return ""
    key = max(sizes, key=int)
    r = sizes[key]

    def verdict(ok: bool | None) -> str:
        return "–" if ok is None else ("met" if ok else "NOT met")

    def le(v: Any, t: float) -> bool | None:
        return None if v is None else v <= t

    def ge(v: Any, t: float) -> bool | None:
        return None if v is None else v >= t

    checks = [
        ("search_clip p50 ≤ 10 ms", get_path(r, "search.global.product.p50_ms"), le, TARGETS["search_p50_ms"], 2),
        ("≥ 50× faster than the linear scan (p50)", get_path(r, "search.global.speedup_p50"), ge,
         TARGETS["speedup"], 1),
        ("recall@10 (raw index) ≥ 0.95", get_path(r, "recall.index_topk.all"), ge, TARGETS["recall"], 3),
        ("recall@10 (search_node) ≥ 0.95", get_path(r, "recall.search_node.all"), ge, TARGETS["recall"], 3),
        ("identity resolution p50 ≤ 5 ms", get_path(r, "identity.all.p50_ms"), le, TARGETS["resolve_ms"], 2),
        ("batched load ≥ 5,000 nodes/s", get_path(r, "load.nodes_per_s"), ge, TARGETS["write_nodes_per_s"], 0),
        ("write_memories ≥ 5,000 memories/s", get_path(r, "writes.memories_per_s"), ge,
         TARGETS["write_nodes_per_s"], 0),
        ("bulk write_import ≥ 5,000 memories/s (index present)", get_path(r, "import.memories_per_s"), ge,
         TARGETS["import_memories_per_s"], 0),
        ("write_memories per clip of 20 p50 ≤ 20 ms", get_path(r, "writes.write_memories.p50_ms"), le,
         TARGETS["write_clip_ms"], 1),
    ]
    lines = [f"Targets at {title or f'{int(key):,} memories'}:", "", "| target | measured | verdict |",
             "|---|---|---|"]
    for label, value, op, goal, digits in checks:
        lines.append(f"| {label} | {_fmt(value, digits)} | {verdict(op(value, goal))} |")
    return "\n".join(lines)
