"""Loads a synthetic corpus into Neo4j with batched, named UNWIND queries, then builds the product's indexes.

Order: uniqueness constraints (migration 1, which the loader's MERGE/MATCH need), the data, then the remaining
product migrations. The vector indexes are created after the load on purpose: population of a vector index is
asynchronous and is timed on its own (`index_build_s`), instead of being smeared over every load batch.
All DDL is the product's own schema files with the product's parameters.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from bench.synth import Corpus, FaceSet, clip_key, episodic_count, memory_id, memory_text, source_id
from m3graph.cypher import query
from m3graph.graphdb.executor import Executor, Tx
from m3graph.schema.migrations import (
    MIGRATIONS,
    _vector_params,
    applicable,
    apply_migrations,
    graph_text_model,
    memory_index_statement,
)
from m3graph.settings import Settings

log = logging.getLogger("bench.loader")
FACE_VIDEO = "bench-faces"


@dataclass
class LoadStats:
    seconds: float = 0.0
    memories: int = 0
    clips: int = 0
    videos: int = 0
    batches: int = 0
    batch_s: list[float] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        return self.memories + self.clips + self.videos

    def summary(self) -> dict[str, Any]:
        out = asdict(self)
        bs = out.pop("batch_s")
        out.update(nodes=self.nodes, nodes_per_s=self.nodes / self.seconds if self.seconds else None,
                   memories_per_s=self.memories / self.seconds if self.seconds else None,
                   batch_p50_s=float(np.median(bs)) if bs else None,
                   batch_max_s=float(np.max(bs)) if bs else None)
        return out


def create_constraints(ex: Executor) -> None:
    for statement in MIGRATIONS[0].statements:
        ex.schema(statement)


def _clip_rows(corpus: Corpus, clips: range, clip_seconds: float) -> list[dict[str, Any]]:
    rows = []
    for g in clips:
        v, c = int(corpus.clip_video[g]), int(corpus.clip_index[g])
        n_clips = int(corpus.video_clips[v])
        rows.append({"source_id": source_id(v), "clip_index": c, "start_s": c * clip_seconds,
                     "end_s": (c + 1) * clip_seconds, "clip_count": n_clips, "duration_s": n_clips * clip_seconds})
    return rows


def _memory_rows(corpus: Corpus, clips: range) -> list[dict[str, Any]]:
    rows = []
    share = corpus.spec.episodic_share
    for g in clips:
        v, c = int(corpus.clip_video[g]), int(corpus.clip_index[g])
        lo, hi = int(corpus.clip_start[g]), int(corpus.clip_start[g + 1])
        n_episodic = episodic_count(hi - lo, share)
        key = clip_key(v, c)
        for order, row in enumerate(range(lo, hi)):
            kind = "episodic" if order < n_episodic else "semantic"
            text = memory_text(row, kind, int(corpus.topic[row]), v, c)
            rows.append({"clip_key": key, "memory_id": memory_id(v, c, order, kind, text), "kind": kind,
                         "text": text, "order": order, "embedding": corpus.embeddings[row].tolist()})
    return rows


def memory_ids(corpus: Corpus) -> dict[str, int]:
    """memory_id → row, for mapping index answers back to the numpy corpus."""
    out: dict[str, int] = {}
    share = corpus.spec.episodic_share
    for g in range(corpus.n_clips):
        v, c = int(corpus.clip_video[g]), int(corpus.clip_index[g])
        lo, hi = int(corpus.clip_start[g]), int(corpus.clip_start[g + 1])
        n_episodic = episodic_count(hi - lo, share)
        for order, row in enumerate(range(lo, hi)):
            kind = "episodic" if order < n_episodic else "semantic"
            out[memory_id(v, c, order, kind, memory_text(row, kind, int(corpus.topic[row]), v, c))] = row
    return out


def load_corpus(ex: Executor, corpus: Corpus, settings: Settings, batch: int = 5000,
                progress_every_s: float = 60.0) -> LoadStats:
    """Loads every clip and memory; each transaction holds whole clips and about `batch` memories."""
    stats = LoadStats(videos=corpus.n_videos)
    started = last_log = time.perf_counter()
    g = 0
    while g < corpus.n_clips:
        end = g + 1
        while end < corpus.n_clips and corpus.clip_start[end + 1] - corpus.clip_start[g] <= batch:
            end += 1
        clips = range(g, end)
        t0 = time.perf_counter()
        clip_rows = _clip_rows(corpus, clips, settings.clip_seconds)
        mem_rows = _memory_rows(corpus, clips)
        next_rows = [r for r in clip_rows if r["clip_index"] > 0]

        def work(tx: Tx, clip_rows: list[dict[str, Any]] = clip_rows, mem_rows: list[dict[str, Any]] = mem_rows,
                 next_rows: list[dict[str, Any]] = next_rows) -> int:
            tx.run("bench/load_clips", clips=clip_rows)
            tx.run("bench/load_next", clips=next_rows)
            return int(tx.run("bench/load_memories", rows=mem_rows)[0]["n"])

        stats.memories += ex.write_tx(work, label="bench_load")
        stats.clips += len(clips)
        stats.batches += 1
        stats.batch_s.append(time.perf_counter() - t0)
        g = end
        now = time.perf_counter()
        if now - last_log >= progress_every_s:
            last_log = now
            log.info("loaded %d/%d memories (%.0f memories/s)", stats.memories, corpus.n,
                     stats.memories / (now - started))
    stats.seconds = time.perf_counter() - started
    return stats


def face_rows(faces: FaceSet, lo: int, hi: int) -> list[dict[str, Any]]:
    """Entity ids are 1-based row numbers; the shape is EntityState.row() of m3graph/graphdb/identity.py."""
    rows = []
    for i in range(lo, hi):
        ex, q = faces.exemplars[i], faces.quality[i]
        centroid = ex.mean(axis=0)
        norm = float(np.linalg.norm(centroid))
        eid = i + 1
        rows.append({"entity_id": eid, "clip_index": i % 1000, "exemplars": ex.ravel().tolist(),
                     "quality": q.tolist(), "obs": [f"{FACE_VIDEO}#{i % 1000}#f{eid}#{j}" for j in range(len(q))],
                     "dim": int(ex.shape[1]), "centroid": centroid.tolist(), "norm": norm,
                     "unit": (centroid / norm).tolist()})
    return rows


def load_faces(ex: Executor, faces: FaceSet, batch: int = 2000) -> dict[str, Any]:
    started = time.perf_counter()
    for lo in range(0, faces.n, batch):
        rows = face_rows(faces, lo, min(faces.n, lo + batch))
        ex.write("bench/load_faces", entities=rows, source_id=FACE_VIDEO)
    # New entities and characters must get ids past the loaded ones, as graph/allocate_ids would have given.
    ex.write("bench/set_counter", name="entity", value=faces.n)
    ex.write("bench/set_counter", name="character", value=faces.n)
    seconds = time.perf_counter() - started
    nodes = 2 * faces.n  # Face + Character
    return {"faces": faces.n, "seconds": seconds, "nodes_per_s": nodes / seconds if seconds else None,
            "exemplars": int(sum(len(q) for q in faces.quality))}


def wait_for_indexes(ex: Executor, timeout_s: float = 7200.0, log_every_s: float = 30.0) -> float:
    """Polls SHOW INDEXES until every index is ONLINE, then runs the product's db.awaitIndexes; returns seconds."""
    started = last_log = time.perf_counter()
    while True:
        rows = ex.read("bench/index_progress")
        failed = [r["name"] for r in rows if r["state"] == "FAILED"]
        if failed:
            raise RuntimeError(f"index population failed: {failed}")
        pending = [r for r in rows if r["state"] != "ONLINE"]
        if not pending:
            break
        now = time.perf_counter()
        if now - started > timeout_s:
            raise TimeoutError(f"indexes still populating after {timeout_s:.0f} s: {pending}")
        if now - last_log >= log_every_s:
            last_log = now
            log.info("waiting for indexes: %s", ", ".join(f"{r['name']} {r['progress']:.0f}%" for r in pending))
        time.sleep(0.5)
    ex.schema("schema/await_indexes", timeout_s=3600)
    return time.perf_counter() - started


def build_indexes(ex: Executor, settings: Settings) -> dict[str, float]:
    """The product's range and full-text indexes, then each vector index, timed separately; then migrations."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    for migration in applicable(ex):
        if migration.version != MIGRATIONS[0].version and not migration.vector:
            for statement in migration.statements:
                if migration.text_mark:  # a data write, not DDL: the mark names the model, as apply_migrations does
                    ex.write(statement, model=graph_text_model(ex, settings) or settings.text_model.name)
                else:
                    ex.schema(statement)
    wait_for_indexes(ex)
    timings["range_fulltext_s"] = time.perf_counter() - t0
    # The vector indexes the product ends with on this server, each built once: migration 8 (2026.x) drops the
    # memory index of migration 3 and re-creates it with filter properties, which is free on the product's empty
    # graph but would populate the memory index twice here, so only the final form is built.
    final = memory_index_statement(ex)
    for migration in applicable(ex):
        if not migration.vector:
            continue
        for statement in migration.statements:
            index = statement.removeprefix("schema/vector_")
            if not query(statement).params or (index.startswith("memory_embedding")
                                               and statement != final):
                continue  # a DROP, or the memory index in a form a later migration replaces
            name = index.removesuffix("_filtered")
            t0 = time.perf_counter()
            ex.schema(statement, **_vector_params(settings, statement))
            wait_for_indexes(ex)
            timings[f"{name}_s"] = time.perf_counter() - t0
            log.info("vector index %s online after %.1f s", index, timings[f"{name}_s"])
    for migration in applicable(ex):  # what apply_migrations records; running it would drop the memory index
        ex.write("schema/record_migration", version=migration.version, description=migration.description)
    apply_migrations(ex, settings, await_timeout_s=3600)  # every migration is recorded: checks the schema only
    return timings
