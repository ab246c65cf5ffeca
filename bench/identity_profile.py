"""Where one `resolve_faces` call spends its time: begin, each statement (client and server), and the commit.

Why: the identity target (≤ 5 ms p50 at 10^5 faces, issue 40) is missed by a factor the statements alone do not
explain; a profile that splits the call into its round trips, the server's execution of each statement and the
commit (the face vector index update and the log force) says which part a change can remove. The resolution is
the product's own (`m3graph.graphdb.identity.resolve`), run in an explicit transaction so that begin and commit
can be timed apart; the server time of a statement is what the server reports (`result_available_after` +
`result_consumed_after`, whole milliseconds on Bolt), the rest of its client time is the round trip and the driver.

Kinds of call, each on its own clip of the bench video, one cluster of 3 observations:
* `returning`: a returning person whose observations enter the exemplar set (the centroid moves: the vector index
  is updated at commit), as in `bench.measure.bench_identity`;
* `returning_unchanged`: a returning person already holding the exemplar cap, observations of lower quality than
  every stored exemplar: the same observations are written but the exemplar set, centroid and index are not;
* `new`: a new person (a Face, its character, the index entry);
* `lock_only`: a transaction that only takes the identity lock (graph/lock.cypher): the floor of any write
  transaction here (begin, one statement, the log force at commit);
* `match_only`: a returning person resolved up to its decision, the write statement not sent and the transaction
  rolled back: what a resolution that writes nothing would cost at best (begin, the match, the end of the
  transaction without a log force);
* `api_returning`: a returning person through `MemoryGraph.resolve_faces` itself (its session and managed
  transaction), timed whole, so that `returning` can be read against the call the benchmark times.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from bench.measure import summary
from bench.synth import FaceSet, observations_of, unit
from m3graph.cypher import query
from m3graph.graphdb import executor as executor_module
from m3graph.graphdb.executor import Tx
from m3graph.graphdb.identity import resolve
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo, FaceCluster, FaceObservation

VIDEO = "bench-identity-profile"
KINDS = ("returning", "returning_unchanged", "new", "lock_only", "match_only", "api_returning")


@contextmanager
def _server_times(samples: dict[str, list[tuple[float, float]]], skip: str | None = None) -> Iterator[None]:
    """Per named statement: (client seconds, server seconds), the server's from the result summary. The statement
    named `skip` is not sent (it returns no row)."""
    original = executor_module.Tx.run

    def run(self: Tx, name: str, /, **params: Any) -> list[dict[str, Any]]:
        if name == skip:
            return []
        q = query(name)
        t0 = time.perf_counter()
        result = self._tx.run(q.text, params)
        rows = [record.data() for record in result]
        s = result.consume()
        client = time.perf_counter() - t0
        server_ms = (s.result_available_after or 0) + (s.result_consumed_after or 0)
        samples.setdefault(name, []).append((client, server_ms / 1000.0))
        return rows

    executor_module.Tx.run = run  # type: ignore[method-assign]
    try:
        yield
    finally:
        executor_module.Tx.run = original  # type: ignore[method-assign]


def _cluster(vectors: np.ndarray, clip: int, quality: float) -> FaceCluster:
    obs = [FaceObservation(frame_time_s=30.0 * clip + j, bbox=(10, 10, 74, 74), det_score=0.95,
                           quality=quality - 0.01 * j, embedding=v.tolist()) for j, v in enumerate(vectors)]
    return FaceCluster(label=0, observations=obs)


def _jobs(faces: FaceSet, per_kind: int, seed: int, cap: int) -> list[tuple[str, int | None, FaceCluster | None]]:
    rng = np.random.default_rng(seed)
    full = [i for i, q in enumerate(faces.quality) if len(q) >= cap]
    jobs: list[tuple[str, int | None, FaceCluster | None]] = []
    for c in range(len(KINDS) * per_kind):
        kind = KINDS[c % len(KINDS)]
        if kind in ("returning", "match_only", "api_returning"):
            target = int(rng.integers(0, faces.n))
            jobs.append((kind, target + 1, _cluster(observations_of(faces.identities[target], 3, rng, faces.noise),
                                                    c, 0.9)))
        elif kind == "returning_unchanged":
            if not full:
                continue
            target = full[int(rng.integers(0, len(full)))]
            low = float(faces.quality[target].min()) - 0.1  # below every stored exemplar: the set stays the same
            jobs.append((kind, target + 1, _cluster(observations_of(faces.identities[target], 3, rng, faces.noise),
                                                    c, low)))
        elif kind == "new":
            fresh = unit(np.asarray(rng.standard_normal(faces.identities.shape[1])))
            jobs.append((kind, None, _cluster(observations_of(fresh, 3, rng, faces.noise), c, 0.9)))
        else:
            jobs.append((kind, None, None))
    return jobs


def profile_identity(graph: MemoryGraph, faces: FaceSet, per_kind: int, seed: int, warmup: int = 2
                     ) -> dict[str, Any]:
    """The per-part profile of `resolve_faces` (see the module docstring): `per_kind` timed calls of each kind
    (`commit` is the rollback for `match_only`),
    after `warmup` untimed ones of each, the kinds interleaved so that load changes reach every kind alike."""
    settings = graph.settings
    jobs = _jobs(faces, warmup + per_kind, seed, settings.identity.max_face_exemplars)
    for c in range(len(jobs)):
        graph.upsert_clip(ClipInfo(source_id=VIDEO, clip_index=c, start_s=30.0 * c, end_s=30.0 * c + 30.0))
    parts: dict[str, dict[str, list[float]]] = {}
    right: dict[str, int] = {}
    seen: dict[str, int] = {}
    with graph.ex.session() as session:
        for c, (kind, expected, cluster) in enumerate(jobs):
            stmts: dict[str, list[tuple[float, float]]] = {}
            if kind == "api_returning" and cluster is not None:
                t0 = time.perf_counter()
                res = graph.resolve_faces(VIDEO, c, [cluster])
                elapsed = time.perf_counter() - t0
                seen[kind] = seen.get(kind, 0) + 1
                if seen[kind] > warmup:
                    parts.setdefault(kind, {}).setdefault("total", []).append(elapsed)
                    right[kind] = right.get(kind, 0) + int(res[0].entity_id == expected)
                continue
            t0 = time.perf_counter()
            tx = session.begin_transaction(timeout=settings.query_timeout_s)
            t1 = time.perf_counter()
            with _server_times(stmts, skip="identity/face_write" if kind == "match_only" else None):
                if cluster is None:
                    Tx(tx, settings.query_timeout_s).run("graph/lock", name="identity:face")  # type: ignore[arg-type]
                    res = None
                else:
                    res, _ = resolve(Tx(tx, settings.query_timeout_s), settings, "face",  # type: ignore[arg-type]
                                     VIDEO, c, [cluster])
            t2 = time.perf_counter()
            if kind == "match_only":
                tx.rollback()
            else:
                tx.commit()
            t3 = time.perf_counter()
            seen[kind] = seen.get(kind, 0) + 1
            if seen[kind] <= warmup:
                continue
            p = parts.setdefault(kind, {})
            p.setdefault("total", []).append(t3 - t0)
            p.setdefault("begin", []).append(t1 - t0)
            p.setdefault("commit", []).append(t3 - t2)
            client_rest = (t2 - t1) - sum(cl for v in stmts.values() for cl, _ in v)
            p.setdefault("client_python", []).append(client_rest)
            for name, vals in stmts.items():
                p.setdefault(f"{name} client", []).append(sum(cl for cl, _ in vals))
                p.setdefault(f"{name} server", []).append(sum(sv for _, sv in vals))
            if res is not None:  # match_only: the decision, never written (a returning person keeps its id)
                ok = res[0].entity_id == expected if expected is not None else res[0].created
                right[kind] = right.get(kind, 0) + int(ok)
    out: dict[str, Any] = {"clips": {kind: [c for c, job in enumerate(jobs) if job[0] == kind]
                                     for kind in dict.fromkeys(job[0] for job in jobs)}}
    for kind, p in parts.items():
        out[kind] = {name: {"p50_ms": summary(v)["p50_ms"], "mean_ms": summary(v)["mean_ms"]} for name, v in p.items()}
        out[kind]["n"] = len(p["total"])
        if kind in right:
            out[kind]["right"] = right[kind]
    return out


def profile_line(profile: dict[str, Any]) -> str:
    """One log line: per kind, the median of each part in ms."""
    return "; ".join(f"{kind}: " + ", ".join(f"{part} {v['p50_ms']:.2f}" for part, v in parts.items()
                                            if isinstance(v, dict)) for kind, parts in profile.items()
                     if kind != "clips")
