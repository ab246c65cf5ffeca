"""An in-process FAISS HNSW index over the same vectors: the physical-limit anchor for the graph's vector search.

Why FAISS: the numpy scan says how much an index saves over brute force, but not how close the graph's query is
to what an HNSW search can cost on this machine. FAISS `IndexHNSWFlat` is the same algorithm as Neo4j's Lucene
HNSW (inner product on unit vectors = cosine, M = the product's `hnsw_m`, efConstruction = its
`ef_construction`, no quantization), in C++ in the calling process: no driver, no Bolt, no transaction, no JVM.
Its efSearch is tuned up a grid to the smallest value whose recall@10 reaches the graph index's measured
recall@10 on the same queries, so both sides are compared at the same answer quality. Search is timed
one query at a time on one thread, as the product issues its queries.

faiss-cpu is a bench-only optional dependency (`pip install -e '.[bench]'`); without it the phase is skipped
and says so in the JSON.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from bench.baseline import exact_topk, recall_at_k
from bench.synth import Corpus, QuerySet

log = logging.getLogger("bench.faiss")
EF_GRID = (10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def _ms(samples_s: list[float]) -> dict[str, Any]:
    ms = np.asarray(samples_s) * 1000.0
    return {"n": int(ms.size), "p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)),
            "p99_ms": float(np.percentile(ms, 99)), "mean_ms": float(ms.mean())}


def bench_faiss(corpus: Corpus, queries: QuerySet, graph_recall: float | None, hnsw_m: int, ef_construction: int,
                clip_topk: int, overfetch: int, k: int = 10, build_threads: int | None = None) -> dict[str, Any]:
    """Build FAISS HNSW, tune efSearch to the graph's recall@k, time top-k and a clip ranking at that efSearch."""
    try:
        import faiss  # type: ignore[import-untyped]
    except ImportError:
        return {"skipped": "faiss-cpu is not installed (pip install -e '.[bench]')"}
    xb = np.ascontiguousarray(corpus.embeddings, dtype=np.float32)
    xq = np.ascontiguousarray(queries.vectors, dtype=np.float32)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(build_threads or threads)
    index = faiss.IndexHNSWFlat(xb.shape[1], hnsw_m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = ef_construction
    t0 = time.perf_counter()
    index.add(xb)
    build_s = time.perf_counter() - t0
    log.info("faiss: HNSW over %d vectors built in %.1f s on %d threads", xb.shape[0], build_s,
             build_threads or threads)
    faiss.omp_set_num_threads(1)  # one query at a time on one thread, like one product call
    truth_rows, truth_scores = exact_topk(corpus.embeddings, queries.vectors, k)

    def recall_at(ef: int) -> tuple[float, list[float]]:
        index.hnsw.efSearch = ef
        values, times = [], []
        for i in range(len(xq)):
            t = time.perf_counter()
            _, idx = index.search(xq[i:i + 1], k)
            times.append(time.perf_counter() - t)
            found = [int(r) for r in idx[0] if r >= 0]
            values.append(recall_at_k(found, truth_rows[i], truth_scores[i], xb[found] @ xq[i]))
        return float(np.mean(values)), times

    sweep = []
    chosen: dict[str, Any] | None = None
    for ef in EF_GRID:
        if ef < k:
            continue
        rec, _ = recall_at(ef)
        sweep.append({"ef_search": ef, "recall": rec})
        if chosen is None and graph_recall is not None and rec >= graph_recall - 1e-9:
            chosen = {"ef_search": ef, "recall": rec}
            break
    matched = chosen is not None
    if chosen is None:  # never reached the graph's recall (or no graph recall): report the largest ef tried
        chosen = dict(sweep[-1])
    ef = int(chosen["ef_search"])
    for _ in range(3):  # warm the timed pass (page faults, caches)
        recall_at(ef)
    rec, times = recall_at(ef)

    # The clip ranking search_clip answers, on FAISS: top (clip_topk * overfetch) memories, best per clip, top clips.
    clip_of_row = corpus.clip_of_rows()
    pool = clip_topk * overfetch
    index.hnsw.efSearch = max(ef, pool)
    clip_times = []
    for i in range(len(xq)):
        t = time.perf_counter()
        scores, idx = index.search(xq[i:i + 1], pool)
        ok = idx[0] >= 0
        clips = clip_of_row[idx[0][ok]]
        best: dict[int, float] = {}
        for c, s in zip(clips.tolist(), scores[0][ok].tolist(), strict=True):
            if s > best.get(c, -2.0):
                best[c] = s
        _ = sorted(best.items(), key=lambda kv: -kv[1])[:clip_topk]
        clip_times.append(time.perf_counter() - t)
    faiss.omp_set_num_threads(threads)
    return {"version": faiss.__version__, "compile_options": faiss.get_compile_options(),  # SIMD dispatch
            "index": f"IndexHNSWFlat(M={hnsw_m}, efConstruction={ef_construction})",
            "build_s": build_s, "build_threads": build_threads or threads, "k": k, "graph_recall": graph_recall,
            "ef_search": ef, "recall_matched": matched, "recall": rec, "sweep": sweep, "topk": _ms(times),
            "clip_rank": _ms(clip_times) | {"pool": pool, "ef_search": max(ef, pool)}}
