"""How much memory the product's own transactions hold: the evidence behind `local.tx_memory_max_mb`.

Neo4j's per-transaction cap (`db.memory.transaction.max`) applies to every transaction, not only to guarded agent
queries, so before choosing it the largest product transaction has to be known. This runs the heaviest write
paths against a running server and samples `SHOW TRANSACTIONS` from a second session while they run, keeping
each transaction's peak of `estimatedUsedHeapMemory + allocatedDirectBytes` (what the cap is checked against):

* `bench_load`: the benchmark loader's transaction (5,000 memories with 384-d vectors, bench/loader.py);
* `import_m3`: `m3graph import-m3` of a research pickle built like the research code's (tests/helpers/m3_pickles),
  `--clips` x (`--episodic` + `--semantic`) memories, 40 faces x 10 exemplars with crops, 20 voices x 20
  exemplars; the whole import is ONE transaction;
* `write_memories`: 20 memories of 8,000 characters (the longest a memory may be) into one clip;
* `ingest_chat`: `m3graph ingest-chat` of one LoCoMo conversation (one transaction per session);
* `delete_video`: `m3graph delete video` of the imported video (one transaction per clip, then the video).

Sampling can miss a peak between two samples, so the cap is also checked the other way round: start the server
with `M3GRAPH_LOCAL__TX_MEMORY_MAX_MB=N` and run this again; an operation that needs more than N fails (exit 1)
with the server's memory error. Run (a scratch server; it writes bench and import data):

    M3GRAPH_LOCAL__PORT=7719 M3GRAPH_LOCAL__HOME=/tmp/txmem M3GRAPH_LOCAL__TX_MEMORY_MAX_MB=0 m3graph db start
    M3GRAPH_LOCAL__PORT=7719 M3GRAPH_LOCAL__HOME=/tmp/txmem python -m bench.tx_memory --json /tmp/txmem.json

`--smoke` is the CI size: a pickle of 4 clips x 5 memories, one session of one conversation, 500 loaded memories.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import neo4j
import numpy as np

from bench.smoke import add_smoke, apply_smoke, conversation_slice, scratch
from m3graph.settings import Settings

MIB = 1024 * 1024
SAMPLE = ("SHOW TRANSACTIONS YIELD transactionId AS id, currentQuery AS q, estimatedUsedHeapMemory AS heap, "
          "allocatedDirectBytes AS direct WHERE NOT q STARTS WITH 'SHOW TRANSACTIONS' RETURN id, heap, direct")


class Sampler(threading.Thread):
    """Polls SHOW TRANSACTIONS from its own session; `peaks` maps a transaction id to its largest sample."""

    def __init__(self, driver: neo4j.Driver, database: str) -> None:
        super().__init__(daemon=True)
        self.driver, self.database = driver, database
        self.peaks: dict[str, int] = {}
        self.samples = 0
        self.stop = threading.Event()

    def run(self) -> None:
        with self.driver.session(database=self.database) as session:
            while not self.stop.is_set():
                for r in session.run(SAMPLE):
                    used = int(r["heap"] or 0) + int(r["direct"] or 0)
                    self.peaks[r["id"]] = max(self.peaks.get(r["id"], 0), used)
                self.samples += 1

    def take(self) -> dict[str, int]:
        peaks, self.peaks = self.peaks, {}
        return peaks


def cli(*args: str) -> None:
    """One `m3graph` command in a subprocess (as a user runs it); a non-zero exit raises with its last line."""
    proc = subprocess.run([sys.executable, "-m", "m3graph.cli", *args], capture_output=True, text=True,
                          check=False, env=os.environ.copy())
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        raise RuntimeError(f"m3graph {args[0]} exited {proc.returncode}: {last}")


def research_pickle(path: Path, clips: int, episodic: int, semantic: int, settings: Settings) -> int:
    """A research-shaped VideoGraph of `clips` x (`episodic` + `semantic`) memories; returns the memory count."""
    from tests.helpers.m3_pickles import TINY_JPEG, GraphBuilder, unit

    rng = np.random.default_rng(3)
    b = GraphBuilder(text_dim=settings.memory.text_dim)
    crop = base64.b64encode(TINY_JPEG).decode("ascii")
    fdim, vdim = settings.identity.face_dim, settings.identity.voice_dim
    faces = [b.face([unit(rng, fdim) for _ in range(10)], [crop] * 10) for _ in range(40)]
    voices = [b.voice([unit(rng, vdim).tolist() for _ in range(20)], [f"line {i} of the speaker" for i in range(20)])
              for _ in range(20)]
    words = ["kitchen", "coffee", "table", "window", "morning", "newspaper", "football", "neighbour", "garden",
             "car"]
    for c in range(clips):
        for i in range(episodic + semantic):
            f, v = faces[(c + i) % len(faces)], voices[(c * 3 + i) % len(voices)]
            text = (f"<face_{f}> and <voice_{v}> talk about the {words[i % 10]} and the {words[(c + i) % 10]}; "
                    f"<face_{f}> points at the {words[(i * 7) % 10]} near the {words[(c * 3) % 10]} in clip {c}.")
            b.text(text, c, "episodic" if i < episodic else "semantic")
    b.dump(path)
    return clips * (episodic + semantic)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clips", type=int, default=240, help="clips of the research pickle (240 = a 2-hour video)")
    p.add_argument("--episodic", type=int, default=30)
    p.add_argument("--semantic", type=int, default=10)
    p.add_argument("--bench-n", type=int, default=10000, help="memories for the loader (batches of 5,000)")
    p.add_argument("--conversation", type=Path,
                   default=Path(__file__).resolve().parents[1] / "../shared/data/conversations/locomo-41.json")
    p.add_argument("--json", type=Path, help="write the results here too")
    p.add_argument("--only", default="", help="comma-separated operations to run (default: all)")
    add_smoke(p, "4 clips x 5 memories, one session of one conversation, 500 loaded memories")
    args = apply_smoke(p.parse_args(), clips=4, episodic=3, semantic=2, bench_n=500)
    if args.smoke:
        sliced = conversation_slice(scratch("txmem"), sessions=1, questions=0, source=args.conversation.parent)
        args.conversation = sliced / f"smoke-{args.conversation.name}"
    settings = Settings()
    auth = (settings.neo4j_user, settings.neo4j_password.get_secret_value())
    driver = neo4j.GraphDatabase.driver(settings.bolt_uri, auth=auth)
    cap = driver.execute_query("SHOW SETTINGS YIELD name, value WHERE name = 'db.memory.transaction.max' "
                               "RETURN value").records[0]["value"]
    sampler = Sampler(driver, settings.neo4j_database)
    sampler.start()
    work = Path(tempfile.mkdtemp(prefix="txmem-"))
    results: list[dict[str, Any]] = []

    def measure(name: str, step: Callable[[], Any], **facts: Any) -> None:
        if args.only and name not in args.only.split(","):
            return
        sampler.take()
        t0 = time.perf_counter()
        error = None
        try:
            step()
        except Exception as exc:  # the record says how it failed; the next operation still runs
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        time.sleep(0.3)
        peaks = sampler.take()
        row = {"operation": name, **facts, "ok": error is None, "error": error,
               "seconds": round(time.perf_counter() - t0, 1), "transactions_seen": len(peaks),
               "peak_mib": round(max(peaks.values(), default=0) / MIB, 1)}
        results.append(row)
        print(json.dumps(row), flush=True)

    from bench.loader import create_constraints, load_corpus
    from bench.synth import CorpusSpec, make_corpus
    from m3graph.graphdb.executor import Executor
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.graphdb.types import MemoryIn

    MemoryGraph.connect(settings).close()  # migrations first, like every product command
    n_mem = research_pickle(work / "big.pkl", args.clips, args.episodic, args.semantic, settings)
    measure("import_m3", lambda: cli("import-m3", str(work / "big.pkl"), "--video", "txmem-big"), memories=n_mem)

    def write_20() -> None:
        rng = np.random.default_rng(5)
        mems = []
        for i in range(20):
            vec = rng.normal(size=settings.memory.text_dim)
            text = (f"memory {i}: " + "the long description of a scene " * 300)[:8000]
            mems.append(MemoryIn(kind="episodic" if i < 14 else "semantic", text=text,
                                 embedding=(vec / np.linalg.norm(vec)).tolist()))
        with MemoryGraph.connect(settings, migrate=False) as graph:
            graph.write_memories("txmem-big", 3, mems)

    measure("write_memories", write_20, memories=20, chars_each=8000)
    conv = args.conversation.resolve()
    measure("ingest_chat", lambda: cli("ingest-chat", str(conv), "--source-id", "txmem-chat"), file=conv.name)
    measure("delete_video", lambda: cli("delete", "video", "txmem-big", "--yes"), memories=n_mem)

    def bench_load() -> None:
        with Executor.connect(settings) as ex:
            create_constraints(ex)
            load_corpus(ex, make_corpus(CorpusSpec(n=args.bench_n, seed=11)), settings, batch=5000)

    measure("bench_load", bench_load, memories=args.bench_n, batch=5000)
    sampler.stop.set()
    sampler.join(timeout=10)
    driver.close()
    summary = {"db.memory.transaction.max": cap, "samples": sampler.samples, "operations": results}
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in summary.items() if k != "operations"}))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
