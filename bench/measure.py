"""The measurements, each through the product API (`MemoryGraph`) on a loaded graph, next to its numpy baseline."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.baseline import LinearScan, exact_topk, recall_at_k
from bench.dissect import QueryTimer
from bench.synth import Corpus, FaceSet, QuerySet, observations_of, source_id, unit
from m3graph.cypher import query
from m3graph.graphdb.imports import ImportRows
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo, FaceCluster, FaceObservation, MemoryIn

log = logging.getLogger("bench.measure")


def summary(samples_s: Sequence[float]) -> dict[str, Any]:
    """Latency summary in milliseconds."""
    ms = np.asarray(samples_s, dtype=np.float64) * 1000.0
    if ms.size == 0:
        return {"n": 0}
    return {"n": int(ms.size), "p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)),
            "p99_ms": float(np.percentile(ms, 99)), "mean_ms": float(ms.mean()), "min_ms": float(ms.min()),
            "max_ms": float(ms.max())}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def bench_ping(graph: MemoryGraph, n: int = 100) -> dict[str, Any]:
    """Latency of `RETURN 1` through the executor: the floor under every product call on this machine."""
    for _ in range(10):
        graph.ex.read("bench/ping")
    return summary([timed(lambda: graph.ex.read("bench/ping"))[0] for _ in range(n)])


def global_clip(corpus: Corpus, vid: str, clip_index: int) -> int:
    return int(vid.removeprefix("bench-v")) * corpus.spec.clips_per_video + clip_index


def _agreement(product: list[list[int]], reference: list[list[int]]) -> dict[str, float]:
    same = [set(p) == set(r) for p, r in zip(product, reference, strict=True)]
    hits = sum(len(set(p) & set(r)) for p, r in zip(product, reference, strict=True))
    total = sum(len(r) for r in reference)
    return {"same_clips": float(np.mean(same)), "clip_recall": hits / total if total else 1.0}


def bench_search(graph: MemoryGraph, corpus: Corpus, queries: QuerySet, warmup: int = 10, dissect: int = 20
                 ) -> dict[str, Any]:
    """search_clip (product) against the linear scan, for no filter, a filter over half the videos, one video."""
    cfg = graph.settings.search
    qs = [q.astype(np.float64).tolist() for q in queries.vectors]
    out: dict[str, Any] = {"queries": len(qs), "warmup": warmup}
    videos_half = np.arange(0, corpus.n_videos, 2)
    half_ids = [source_id(int(v)) for v in videos_half]
    row_video = corpus.video_of_rows()
    one_video = [int(row_video[r]) for r in queries.rows]
    scans = {"global": LinearScan.full(corpus), "many_videos": LinearScan.of_videos(corpus, videos_half)}
    per_video = {v: LinearScan.of_videos(corpus, np.asarray([v])) for v in set(one_video)}

    def product_call(variant: str, i: int) -> Any:
        if variant == "global":
            return graph.search.search(SearchSpec(qs[i]))
        if variant == "rank_global":
            return graph.search.rank_clips(qs[i])
        if variant == "many_videos":
            return graph.search.search(SearchSpec(qs[i], videos=half_ids))
        return graph.search.search(SearchSpec(qs[i], videos=[source_id(one_video[i])]))

    def scan_of(variant: str, i: int) -> LinearScan:
        if variant in ("global", "rank_global"):
            return scans["global"]
        return scans["many_videos"] if variant == "many_videos" else per_video[one_video[i]]

    for variant in ("global", "rank_global", "many_videos", "one_video"):
        for i in range(min(warmup, len(qs))):
            product_call(variant, len(qs) - 1 - i)
            scan_of(variant, len(qs) - 1 - i).rank_clips(queries.vectors[len(qs) - 1 - i], cfg.clip_topk,
                                                         graph.settings.search_floor)
        prod_s, base_s, prod_clips, base_clips = [], [], [], []
        for i in range(len(qs)):
            s, res = timed(lambda variant=variant, i=i: product_call(variant, i))
            prod_s.append(s)
            if variant == "rank_global":
                prod_clips.append([global_clip(corpus, v, c) for v, c, _ in res])
            else:
                prod_clips.append([global_clip(corpus, r.source_id, r.clip_index) for r in res])
            scan = scan_of(variant, i)
            s, ref = timed(lambda scan=scan, i=i: scan.rank_clips(queries.vectors[i], cfg.clip_topk,
                                                                   graph.settings.search_floor))
            base_s.append(s)
            base_clips.append([c for c, _ in ref])
        p, b = summary(prod_s), summary(base_s)
        out[variant] = {"product": p, "linear_scan": b, "speedup_p50": b["p50_ms"] / p["p50_ms"],
                        "agreement": _agreement(prod_clips, base_clips)}
        log.info("search %s: product p50 %.2f ms, scan p50 %.2f ms", variant, p["p50_ms"], b["p50_ms"])
    for variant in ("global", "many_videos", "one_video"):
        with QueryTimer() as qt:
            for i in range(min(dissect, len(qs))):
                product_call(variant, i)
        out[variant]["queries"] = qt.report(max(1, min(dissect, len(qs))))
    n_half = int(graph.ex.read("search/count_candidates", videos=half_ids, before_clip=None)[0]["n"])
    count_s = [timed(lambda: graph.ex.read("search/count_candidates", videos=half_ids, before_clip=None))[0]
               for _ in range(20)]
    out["many_videos"].update(videos=len(half_ids), candidates=n_half,
                              path="exact" if n_half <= cfg.exact_scan_limit else "index",
                              count_candidates=summary(count_s))
    sizes = [int(np.sum(row_video == v)) for v in set(one_video)]
    out["one_video"].update(path="exact" if max(sizes) <= cfg.exact_scan_limit else "index",
                            memories_per_video_median=float(np.median(sizes)))
    out["global"]["path"] = out["rank_global"]["path"] = "index"
    return out


def bench_recall(graph: MemoryGraph, corpus: Corpus, queries: QuerySet, ids: dict[str, int], k: int = 10
                 ) -> dict[str, Any]:
    """recall@k of the raw index top k and of the product's search_node(k), against exact numpy top k."""
    truth_rows, truth_scores = exact_topk(corpus.embeddings, queries.vectors, k)
    kinds = np.asarray(queries.kind)
    index_recall, node_recall, index_s, node_s = [], [], [], []
    for i, q in enumerate(queries.vectors):
        qv = q.astype(np.float64).tolist()
        s, rows = timed(lambda qv=qv: graph.ex.read("bench/index_topk", query=qv, k=k))
        index_s.append(s)
        found = [ids[r["memory_id"]] for r in rows]
        exact = corpus.embeddings[found] @ q
        index_recall.append(recall_at_k(found, truth_rows[i], truth_scores[i], exact))
        s, res = timed(lambda qv=qv: graph.search.search(SearchSpec(qv, mode="node", k=k)))
        node_s.append(s)
        mems = sorted(((m.score or -1.0, ids[m.memory_id]) for r in res for m in r.memories), reverse=True)
        found = [row for _, row in mems]
        exact = corpus.embeddings[found] @ q
        node_recall.append(recall_at_k(found, truth_rows[i], truth_scores[i], exact))

    def by_kind(values: list[float]) -> dict[str, float]:
        arr = np.asarray(values)
        out = {"all": float(arr.mean())}
        for kind in sorted(set(queries.kind)):
            out[kind] = float(arr[kinds == kind].mean())
        out["min"] = float(arr.min())
        return out

    return {"k": k, "queries": len(queries.kind), "index_topk": by_kind(index_recall),
            "search_node": by_kind(node_recall), "index_topk_latency": summary(index_s),
            "search_node_latency": summary(node_s),
            "exact_top1_cos_median": float(np.median(truth_scores[:, 0])),
            "exact_topk_cos_median": float(np.median(truth_scores[:, -1]))}


def _cluster(vectors: np.ndarray, clip: int) -> FaceCluster:
    obs = [FaceObservation(frame_time_s=30.0 * clip + j, bbox=(10, 10, 74, 74), det_score=0.95,
                           quality=0.9 - 0.05 * j, embedding=v.tolist()) for j, v in enumerate(vectors)]
    return FaceCluster(label=0, observations=obs)


def bench_identity(graph: MemoryGraph, faces: FaceSet, per_kind: int, seed: int, warmup: int = 5,
                   dissect: int = 20) -> dict[str, Any]:
    """resolve_faces on clips with one cluster of 3 observations: a returning person, or a new one."""
    rng = np.random.default_rng(seed)
    vid = "bench-identity"
    timed_calls = warmup + 2 * per_kind
    total = timed_calls + dissect
    for c in range(total):
        graph.upsert_clip(ClipInfo(source_id=vid, clip_index=c, start_s=30.0 * c, end_s=30.0 * c + 30.0))
    jobs: list[tuple[str, int | None, FaceCluster]] = []
    for c in range(total):
        if c % 2 == 0:
            target = int(rng.integers(0, faces.n))
            seen = observations_of(faces.identities[target], 3, rng, faces.noise)
            jobs.append(("returning", target + 1, _cluster(seen, c)))
        else:
            fresh = unit(rng.standard_normal(faces.identities.shape[1]))
            jobs.append(("new", None, _cluster(observations_of(fresh, 3, rng, faces.noise), c)))
    times: dict[str, list[float]] = {"returning": [], "new": []}
    correct = {"returning": 0, "new": 0}
    for c, (kind, expected, cluster) in enumerate(jobs[:timed_calls]):
        s, res = timed(lambda c=c, cluster=cluster: graph.resolve_faces(vid, c, [cluster]))
        if c < warmup:
            continue
        times[kind].append(s)
        r = res[0]
        correct[kind] += int(r.entity_id == expected) if kind == "returning" else int(r.created)
    with QueryTimer() as qt:
        for c in range(timed_calls, total):
            graph.resolve_faces(vid, c, [jobs[c][2]])
    return {"faces": faces.n, "observations_per_cluster": 3, "all": summary(times["returning"] + times["new"]),
            "queries": qt.report(max(1, dissect)),
            "returning": summary(times["returning"]), "new": summary(times["new"]),
            "returning_matched_right": correct["returning"] / max(1, len(times["returning"])),
            "new_created": correct["new"] / max(1, len(times["new"]))}


def bench_writes(graph: MemoryGraph, corpus: Corpus, clips: int, seed: int, budget_s: float = 300.0,
                 per_clip: int = 20, dissect: int = 10, baseline: bool = False) -> dict[str, Any]:
    """The product write path, one clip per call: upsert_clip, then write_memories (episodic + semantic).

    `baseline`: each timed clip is also written, with the same memories, into a twin video (`bench-e…`) by the
    write path before issue 40 (bench/session_writes.py `earlier_writes`: memory/votes for every clip, memory/prepare
    reading the clip's earlier memories and the video's semantic count every time), the two alternating first."""
    from bench.session_writes import earlier_writes  # here: bench.session_writes imports bench.run, which imports us

    rng = np.random.default_rng(seed)
    spec = corpus.spec
    n_episodic = round(per_clip * spec.episodic_share)
    upsert_s: list[float] = []
    write_s: list[float] = []
    probe_s: list[float] = []
    earlier_s: list[float] = []
    started = time.perf_counter()
    done = 0
    qt = QueryTimer()
    for c in range(clips + dissect):
        if c < clips and time.perf_counter() - started > budget_s:
            continue
        vid, clip_index = f"bench-w{c // spec.clips_per_video:03d}", c % spec.clips_per_video
        topics = rng.integers(0, spec.n_topics, 2)
        picked = topics[rng.integers(0, 2, per_clip)]
        noise = rng.standard_normal((per_clip, spec.dim)) / np.sqrt(spec.dim)
        emb = unit(corpus.centres[picked].astype(np.float64) + corpus.spread[picked, None] * noise)
        memories = [MemoryIn(kind="episodic" if j < n_episodic else "semantic",
                             text=f"Written {'event' if j < n_episodic else 'fact'} {j} of clip {clip_index} in {vid}.",
                             embedding=emb[j].tolist()) for j in range(per_clip)]
        info = ClipInfo(source_id=vid, clip_index=clip_index, start_s=30.0 * clip_index, end_s=30.0 * clip_index + 30)
        if c >= clips:  # untimed pass that attributes the time to the queries
            with qt:
                graph.upsert_clip(info)
                graph.write_memories(vid, clip_index, memories)
            continue
        twin = ClipInfo(source_id=vid.replace("bench-w", "bench-e"), clip_index=clip_index, start_s=info.start_s,
                        end_s=info.end_s)
        for earlier in ((False, True) if c % 2 else (True, False)) if baseline else (False,):
            target = twin if earlier else info
            with earlier_writes() if earlier else contextlib.nullcontext():
                s, _ = timed(lambda target=target: graph.upsert_clip(target))
                if not earlier:
                    upsert_s.append(s)
                s, _ = timed(lambda t=target, memories=memories: graph.write_memories(t.source_id, t.clip_index,
                                                                                    memories))
            (earlier_s if earlier else write_s).append(s)
        done += 1
    declared = set(query("memory/clip_state").params)  # the product query's parameters change over time
    for c in range(min(done, 20)):  # the query that finds what a clip contributed before, on its own
        vid = f"bench-w{c // spec.clips_per_video:03d}"
        params = {k: v for k, v in {"clip_key": f"{vid}#{c % spec.clips_per_video}", "source_id": vid,
                                    "clip_index": c % spec.clips_per_video}.items() if k in declared}
        try:
            probe_s.append(timed(lambda params=params: graph.ex.read("memory/clip_state", **params))[0])
        except TypeError as exc:  # a parameter this benchmark does not know: report, keep the rest
            log.warning("memory/clip_state probe skipped: %s", exc)
            break
    mem = done * per_clip
    return {"clips": done, "memories_per_clip": per_clip, "upsert_clip": summary(upsert_s),
            "write_memories": summary(write_s),
            "memories_per_s": mem / sum(write_s) if write_s else None,
            "nodes_per_s": (mem + done) / (sum(write_s) + sum(upsert_s)) if write_s else None,
            "clip_state_query": summary(probe_s), "queries": qt.report(max(1, dissect)),
            **({"write_memories_earlier": summary(earlier_s),
                "earlier_over_current_p50": float(np.median(earlier_s) / np.median(write_s))} if earlier_s else {})}


def bench_import(graph: MemoryGraph, corpus: Corpus, videos: int, clips_per_video: int, seed: int,
                 per_clip: int = 20, dissect: int = 1) -> dict[str, Any]:
    """The product's bulk path, `MemoryGraph.write_import`, with the vector indexes present and populated.

    Why this path: it is what an import of a research memory graph runs (one transaction per video, UNWIND
    batches of 1,000 memories, imports.py), so memories/s here is the product's bulk ingestion rate, with the
    HNSW index updated in the same commit, unlike the bench loader that fills the store before the index
    exists. Videos are synthetic (topic centres plus noise, like bench_writes) with no faces, voices or votes.
    """
    rng = np.random.default_rng(seed)
    spec = corpus.spec
    n_episodic = round(per_clip * spec.episodic_share)
    times, counts, packed = [], [], []
    qt = QueryTimer()
    for v in range(dissect + videos):
        vid = f"bench-i{v:03d}"
        t0 = time.perf_counter()
        clips, rows = [], []
        for c in range(clips_per_video):
            clips.append(ClipInfo(source_id=vid, clip_index=c, start_s=30.0 * c, end_s=30.0 * c + 30.0))
            topics = rng.integers(0, spec.n_topics, 2)
            picked = topics[rng.integers(0, 2, per_clip)]
            noise = rng.standard_normal((per_clip, spec.dim)) / np.sqrt(spec.dim)
            emb = unit(corpus.centres[picked].astype(np.float64) + corpus.spread[picked, None] * noise)
            ckey = f"{vid}#{c}"
            for j in range(per_clip):
                kind = "episodic" if j < n_episodic else "semantic"
                text = f"Imported {'event' if j < n_episodic else 'fact'} {j} of clip {c} in {vid}."
                mid = f"{ckey}#e{j}" if kind == "episodic" else f"{ckey}#s{v:03d}{c:05d}{j:04d}"
                rows.append({"memory_id": mid, "clip_key": ckey, "clip_index": c, "kind": kind, "text": text,
                             "order": j, "embedding": emb[j].tolist(), "is_equivalence": False,
                             "entity_ids": [], "old_id": c * per_clip + j, "mentions": []})
        packed.append(time.perf_counter() - t0)
        import_rows = ImportRows(source_id=vid, source="bench", format="bench-synthetic", clips=clips, faces=[],
                                 voices=[], memories=rows, votes=[], entity_ids=[])
        if v < dissect:  # untimed first pass: warms the server (JIT, caches) and attributes time to the queries
            with qt:
                graph.write_import(import_rows)
            continue
        s, _ = timed(lambda import_rows=import_rows: graph.write_import(import_rows))
        times.append(s)
        counts.append(len(rows))
        log.info("write_import %s: %d memories in %.2f s (%.0f memories/s)", vid, len(rows), s, len(rows) / s)
    total = sum(times)
    per_video = [c / s for c, s in zip(counts, times, strict=True)]
    return {"videos": videos, "clips_per_video": clips_per_video, "memories_per_clip": per_clip,
            "memories": sum(counts), "seconds": total, "memories_per_s": sum(counts) / total if total else None,
            "memories_per_s_per_video_p50": float(np.median(per_video)) if per_video else None,
            "transaction": summary(times), "rows_build_s": sum(packed[dissect:]), "warmup_videos": dissect,
            "queries": qt.report(max(1, dissect))}
