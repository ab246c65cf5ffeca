"""Where a clip write and a bulk import spend their time: every statement, begin and commit.

Why: `write_memories` (≤ 20 ms p50 a clip of 20 memories) and `write_import` (≥ 5,000 memories/s) are issue 40
targets whose client-side dissection (bench/dissect.py) says which statement is slow but not what the rest is. This
runs the product calls themselves on the graph `python -m bench.run` loaded (its `profile` phase) and reports per
call its median, each statement's client time and the server's own figure (result summary), the transaction's
begin and its commit (index upkeep and the log force) timed apart, and a lock-only write transaction as the floor
of any write. With `profile` every statement is sent as `PROFILE <text>` (db hits and the costliest operators; it
adds its own cost, so those times are for attribution only). `commit_floor` then says what the commit costs by the
indexes it updates: n nodes a transaction under a label no index covers, and as Memory nodes with text only, a
vector only, or both (the full-text indexes cost a fixed time per transaction; the vector index a time per node
that grows with the transaction's size).

Tried with it and not kept (2026-12-07): embeddings sent as Bolt 6 vector values instead of lists of floats made
`memory/upsert` 0.55-0.73x and `import/memories` 0.4x of their time, but the calls as a whole moved by 0.94-1.52x
from run to run at load 4-6, within the commit's spread, so the second statement path was not worth its keep.

    python -m bench.run --sizes 100000 --phases profile --profile-clips 25 --profile-imports 4
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

import numpy as np

from bench.synth import unit
from m3graph.cypher import query
from m3graph.graphdb import executor as executor_module
from m3graph.graphdb.executor import Executor, Tx
from m3graph.graphdb.imports import ImportRows
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo, MemoryIn

T = TypeVar("T")


def _walk(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("children", []):
        yield from _walk(child)


def _operators(profile: dict[str, Any]) -> list[dict[str, Any]]:
    """The profile's operators (the driver gives the plan as nested dicts); `time` is in nanoseconds."""
    out = []
    for op in _walk(profile):
        args = op.get("args") or {}
        out.append({"op": str(op.get("operatorType", "?")).split("@")[0], "db_hits": int(op.get("dbHits") or 0),
                    "rows": int(op.get("rows") or 0), "time_ms": (op.get("time") or args.get("Time") or 0) / 1e6,
                    "details": str(args.get("Details", ""))[:120]})
    return out


def profile_text(text: str) -> str:
    """A named statement's text run as PROFILE (after its "CYPHER 25" line, where it has one)."""
    if text.lstrip().startswith("CYPHER"):  # "CYPHER 25 PROFILE ..."
        head, _, rest = text.partition("\n")
        return f"{head}\nPROFILE {rest}"
    return f"PROFILE {text}"


@contextmanager
def profiled(samples: dict[str, list[dict[str, Any]]], profile: bool = True) -> Iterator[None]:
    """Within the block every named statement is timed (client, and the server's own figure from the result
    summary); with `profile` it runs as `PROFILE <text>` and its operators are kept. Around every write transaction
    the time before the work starts (`begin`) and after it returns (`commit`: the server's commit, its index upkeep
    and the log force) is recorded under those two names."""
    original, original_write = executor_module.Tx.run, executor_module.Executor.write_tx

    def run(self: Tx, name: str, /, **params: Any) -> list[dict[str, Any]]:
        text = query(name).text
        t0 = time.perf_counter()
        result = self._tx.run(profile_text(text) if profile else text, params)
        rows = [record.data() for record in result]
        s = result.consume()
        client = time.perf_counter() - t0
        ops = _operators(s.profile) if profile and s.profile is not None else []
        samples.setdefault(name, []).append({
            "client_ms": client * 1000, "server_ms": (s.result_available_after or 0) + (s.result_consumed_after or 0),
            "rows": len(rows), "db_hits": sum(o["db_hits"] for o in ops), "operators": ops})
        return rows

    def write_tx(self: Executor, work: Callable[[Tx], T], label: str = "write_tx") -> T:
        marks: dict[str, float] = {"call": time.perf_counter()}

        def timed_work(tx: Tx) -> T:
            marks["start"] = time.perf_counter()
            out = work(tx)
            marks["end"] = time.perf_counter()
            return out

        out = original_write(self, timed_work, label)
        done = time.perf_counter()
        for name, ms in (("begin", marks["start"] - marks["call"]), ("commit", done - marks["end"])):
            samples.setdefault(name, []).append({"client_ms": ms * 1000, "server_ms": 0, "rows": 0, "db_hits": 0,
                                                 "operators": []})
        return out

    executor_module.Tx.run = run  # type: ignore[method-assign]
    executor_module.Executor.write_tx = write_tx  # type: ignore[method-assign]
    try:
        yield
    finally:
        executor_module.Tx.run = original  # type: ignore[method-assign]
        executor_module.Executor.write_tx = original_write  # type: ignore[method-assign]


def _lock(tx: Tx, name: str) -> list[dict[str, Any]]:
    return tx.run("graph/lock", name=name)


def clip_memories(rng: np.random.Generator, vid: str, clip_index: int, dim: int, per_clip: int = 20,
                  episodic: int = 14) -> list[MemoryIn]:
    """Memories like bench.measure.bench_writes writes: two topics per clip, episodic first."""
    centres = unit(rng.standard_normal((2, dim)))
    picked = centres[rng.integers(0, 2, per_clip)]
    emb = unit(picked + 0.35 * rng.standard_normal((per_clip, dim)) / np.sqrt(dim))
    return [MemoryIn(kind="episodic" if j < episodic else "semantic",
                     text=f"Written {'event' if j < episodic else 'fact'} {j} of clip {clip_index} in {vid}.",
                     embedding=emb[j].tolist()) for j in range(per_clip)]


def import_rows(rng: np.random.Generator, vid: str, clips: int, dim: int, per_clip: int = 20) -> ImportRows:
    infos, rows = [], []
    for c in range(clips):
        infos.append(ClipInfo(source_id=vid, clip_index=c, start_s=30.0 * c, end_s=30.0 * c + 30.0))
        emb = unit(rng.standard_normal((per_clip, dim)))
        for j in range(per_clip):
            kind = "episodic" if j < 14 else "semantic"
            mid = f"{vid}#{c}#e{j}" if kind == "episodic" else f"{vid}#{c}#s{j:04d}"
            rows.append({"memory_id": mid, "clip_key": f"{vid}#{c}", "clip_index": c, "kind": kind,
                         "text": f"Imported {kind} {j} of clip {c} in {vid}.", "order": j,
                         "embedding": emb[j].tolist(), "is_equivalence": False, "entity_ids": [],
                         "old_id": c * per_clip + j, "mentions": []})
    return ImportRows(source_id=vid, source="bench", format="bench-synthetic", clips=infos, faces=[], voices=[],
                      memories=rows, votes=[], entity_ids=[])


def digest(samples: dict[str, list[dict[str, Any]]], calls: int) -> dict[str, dict[str, Any]]:
    """Per statement: runs per call, median client/server ms and db hits, the top operators of its median run."""
    out = {}
    for name, runs in sorted(samples.items(), key=lambda kv: -sum(r["client_ms"] for r in kv[1])):
        med = sorted(runs, key=lambda r: r["client_ms"])[len(runs) // 2]
        top = sorted(med["operators"], key=lambda o: -(o["time_ms"] or o["db_hits"]))[:4]
        out[name] = {"runs_per_call": len(runs) / calls,
                     "client_ms_p50": statistics.median(r["client_ms"] for r in runs),
                     "server_ms_p50": statistics.median(r["server_ms"] for r in runs),
                     "client_ms_per_call": sum(r["client_ms"] for r in runs) / calls,
                     "db_hits_p50": statistics.median(r["db_hits"] for r in runs), "top_operators": top}
    return out


def profile_writes(graph: MemoryGraph, clips: int, imports: int, import_clips: int, seed: int,
                   profile: bool = False) -> dict[str, Any]:
    """The product's write calls on the graph the benchmark loaded: `clips` clip writes (after 3 untimed ones)
    into a new video, then `imports` imports each of `import_clips` clips of 20 memories (after one untimed), each
    split into its statements, begin and commit; plus a lock-only write transaction per clip (the floor of any
    write here)."""
    dim = graph.settings.memory.text_dim
    rng = np.random.default_rng(seed)
    tag = time.strftime("%H%M%S")
    result: dict[str, Any] = {"loadavg_start": os.getloadavg(), "profile": profile}
    writes: dict[str, list[dict[str, Any]]] = {}
    totals: list[float] = []
    floor: dict[str, list[dict[str, Any]]] = {}
    floors = []
    vid = f"bench-p{tag}"
    for c in range(3 + clips if clips else 0):
        info = ClipInfo(source_id=vid, clip_index=c, start_s=30.0 * c, end_s=30.0 * c + 30.0)
        mems = clip_memories(rng, vid, c, dim)
        graph.upsert_clip(info)
        if c < 3:
            graph.write_memories(vid, c, mems)
            continue
        t0 = time.perf_counter()
        with profiled(writes, profile):
            graph.write_memories(vid, c, mems)
        totals.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        with profiled(floor, profile):
            graph.ex.write_tx(partial(_lock, name=f"memory:bench-p{tag}"), label="floor")
        floors.append((time.perf_counter() - t0) * 1000)
    if clips:
        result["write_memories"] = call_summary(writes, totals, clips)
        result["lock_only"] = call_summary(floor, floors, clips)
    if import_clips and imports:
        imp: dict[str, list[dict[str, Any]]] = {}
        seconds: list[float] = []
        n = 0
        for i in range(1 + imports):
            rows = import_rows(rng, f"bench-q{tag}-{i}", import_clips, dim)
            n = len(rows.memories)
            if i == 0:
                graph.write_import(rows)
                continue
            t0 = time.perf_counter()
            with profiled(imp, profile):
                graph.write_import(rows)
            seconds.append((time.perf_counter() - t0) * 1000)
        result["write_import"] = call_summary(imp, seconds, imports) | {"memories": n}
    result["loadavg_end"] = os.getloadavg()
    return result


FLOORS = ("bench/floor_unindexed", "bench/floor_memory_text", "bench/floor_memory_vector", "bench/floor_memory")


def _floor_write(tx: Tx, name: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return tx.run(name, rows=rows)


def commit_floor(graph: MemoryGraph, sizes: Sequence[int] = (1, 20, 1000), repeats: int = 5,
                 seed: int = 0) -> dict[str, Any]:
    """What a commit costs by the indexes it updates: `n` nodes with a memory's properties written in one
    transaction under a label no index covers, as Memory nodes with text but no vector (range and full-text
    indexes), with a vector but no text (range and vector indexes), and with both; median statement and commit ms
    per (statement, n), the statements alternating. Everything written is deleted afterwards."""
    dim = graph.settings.memory.text_dim
    rng = np.random.default_rng(seed)
    tag = f"bench-floor-{time.strftime('%H%M%S')}"
    samples: dict[str, dict[int, dict[str, list[dict[str, Any]]]]] = {f: {n: {} for n in sizes} for f in FLOORS}
    k = 0
    for rep in range(repeats):
        for n in sizes:
            for name in FLOORS if rep % 2 == 0 else FLOORS[::-1]:
                vid = f"{tag}-{k}"
                emb = unit(rng.standard_normal((n, dim)))
                rows = [{"memory_id": f"{vid}#{j}", "text": f"Floor statement {j} of write {k}.",
                         "embedding": emb[j].tolist(), "source_id": vid} for j in range(n)]
                k += 1
                try:
                    with profiled(samples[name][n], profile=False):
                        graph.ex.write_tx(partial(_floor_write, name=name, rows=rows), label="floor")
                finally:  # untimed, one write at a time: the graph stays the size the benchmark loaded
                    graph.ex.write_tx(partial(_floor_delete, source_id=vid), label="floor_delete")
    out: dict[str, Any] = {"loadavg_end": os.getloadavg(), "repeats": repeats}
    for name in FLOORS:
        out[name] = {str(n): {part: statistics.median(r["client_ms"] for r in samples[name][n][key])
                              for part, key in (("statement_ms", name), ("commit_ms", "commit"))} for n in sizes}
    return out


def _floor_delete(tx: Tx, source_id: str) -> list[dict[str, Any]]:
    return tx.run("bench/floor_delete", source_id=source_id)


def floor_lines(floor: dict[str, Any]) -> list[str]:
    sizes = list(floor[FLOORS[0]])
    lines = ["commit floor, median ms of " + str(floor["repeats"]) + " (statement / commit) for n nodes a transaction:",
             "| written | " + " | ".join(f"n = {n}" for n in sizes) + " |", "|---" * (1 + len(sizes)) + "|"]
    for name in FLOORS:
        cells = [f"{floor[name][n]['statement_ms']:.1f} / {floor[name][n]['commit_ms']:.1f}" for n in sizes]
        lines.append(f"| {name.removeprefix('bench/floor_')} | " + " | ".join(cells) + " |")
    return lines


def call_summary(samples: dict[str, list[dict[str, Any]]], totals_ms: list[float], calls: int) -> dict[str, Any]:
    """The call's median total, its statements (and begin/commit), and what none of them covers (Python)."""
    stmts = digest(samples, calls)
    total = statistics.median(totals_ms)
    return {"total_ms_p50": total, "statements": stmts,
            "python_and_rest_ms": total - sum(s["client_ms_per_call"] for s in stmts.values())}


def report_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"load average {tuple(round(x, 2) for x in result['loadavg_start'])} -> "
             f"{tuple(round(x, 2) for x in result['loadavg_end'])}; PROFILE {'on' if result['profile'] else 'off'}"]
    for call in ("write_memories", "lock_only", "write_import"):
        if call not in result:
            continue
        r = result[call]
        extra = (f", {r['memories']} memories ({r['memories'] / r['total_ms_p50'] * 1000:.0f}/s)"
                 if "memories" in r else "")
        lines.append(f"{call}: total p50 {r['total_ms_p50']:.1f} ms{extra}; not in any statement "
                     f"{r['python_and_rest_ms']:.1f} ms")
        for name, s in r["statements"].items():
            ops = "; ".join(f"{o['op']} {o['db_hits']} hits {o['rows']} rows" for o in s["top_operators"])
            lines.append(f"  {name}: x{s['runs_per_call']:.1f}, {s['client_ms_per_call']:.1f} ms per call (p50 "
                         f"{s['client_ms_p50']:.1f}, server {s['server_ms_p50']:.0f}), {s['db_hits_p50']:.0f} db hits"
                         + (f" | {ops}" if ops else ""))
    return lines
