"""Match-or-create of per-clip face/voice clusters against persistent `Face`/`Voice` entities.

Staged like the reference but without its linear scan: the vector index proposes top-K candidates by the
unit centroid, then an exact rerank reproduces the reference score (mean pairwise cosine between the
cluster's exemplars and the entity's exemplars, which equals the dot product of the two exemplar means;
reference §3.4, §11.2) against the thresholds 0.3 (face) / 0.6 (voice). Differences that fix reference defects:

* exemplar sets are bounded by quality (deterministic), not by an unseeded random sample;
* two clusters that co-occur in the clip (same frame, or overlapping speech) never map to one entity;
* clusters of one clip can match entities created earlier in the same clip;
* the whole decision runs under a per-kind lock inside one transaction, so two workers that see the same new
  person at once end with one entity, exactly as a sequential run would;
* a clip that was already resolved returns its stored mapping and writes nothing (idempotent retries).

Two round trips per resolution (issue 12), and no stored vector ever comes back to the client:
`identity/{kind}_match` takes the lock and returns the clip check, the stored mapping of an already resolved
clip, and the exact scores of the index's candidates (ids and scores only); `decide` runs here; then
`identity/{kind}_write` allocates the new ids, merges the exemplars and derives the centroid on the server, and
writes the observations, co-occurrences and the new entities' characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.graphdb.executor import Tx
from m3graph.graphdb.types import FaceCluster, Resolution, VoiceCluster, clip_key
from m3graph.settings import Settings

Kind = Literal["face", "voice"]
# The statements of a resolution per kind, spelled out so that grep finds every caller of a .cypher file.
_MATCH = {"face": "identity/face_match", "voice": "identity/voice_match"}
_WRITE = {"face": "identity/face_write", "voice": "identity/voice_write"}


@dataclass
class EntityState:
    """An entity's bounded exemplar set; the centroid is always derived from it."""

    entity_id: int
    vectors: np.ndarray  # (n, d) unit rows
    quality: list[float]
    obs: list[str]
    created: bool = False

    @property
    def centroid(self) -> np.ndarray:
        return np.asarray(self.vectors.mean(axis=0))

    def merged(self, vectors: np.ndarray, quality: Sequence[float], obs: Sequence[str], cap: int) -> EntityState:
        """Keeps the `cap` best exemplars by quality; ties go to the lexicographically first observation key."""
        all_vec = np.vstack([self.vectors, vectors])
        all_q = [*self.quality, *quality]
        all_obs = [*self.obs, *obs]
        order = sorted(range(len(all_q)), key=lambda i: (-all_q[i], all_obs[i]))[:cap]
        return EntityState(self.entity_id, all_vec[order], [all_q[i] for i in order], [all_obs[i] for i in order],
                           self.created)

    def row(self) -> dict[str, Any]:
        c = self.centroid
        norm = float(np.linalg.norm(c))
        return {
            "entity_id": self.entity_id,
            "exemplars": self.vectors.astype(float).ravel().tolist(),
            "quality": [float(q) for q in self.quality],
            "obs": list(self.obs),
            "dim": int(self.vectors.shape[1]),
            "centroid": c.astype(float).tolist(),
            "norm": norm,
            "unit": (c / norm if norm > 0 else c).astype(float).tolist(),
        }

    @classmethod
    def from_row(cls, entity_id: int, exemplars: list[float], quality: list[float], obs: list[str]) -> EntityState:
        dim = len(exemplars) // max(len(quality), 1)
        return cls(entity_id, np.asarray(exemplars, dtype=np.float64).reshape(len(quality), dim), list(quality),
                   list(obs))


@dataclass
class ClusterQuery:
    """One per-clip cluster, reduced to what matching needs."""

    label: int
    vectors: np.ndarray  # all observations, unit rows
    quality: list[float]
    obs_keys: list[str]
    spans: list[tuple[float, float]]  # frame instants (start == end) or utterance intervals
    top: list[int] = field(default_factory=list)  # indices of the exemplars used for matching

    @property
    def query_mean(self) -> np.ndarray:
        return np.asarray(self.vectors[self.top].mean(axis=0))


def unit_rows(vectors: Sequence[Sequence[float]], dim: int, what: str) -> np.ndarray:
    sizes = sorted({len(v) for v in vectors})
    if sizes != [dim]:
        raise InvalidInputError(f"{what}: expected {dim}-d embeddings, got lengths {sizes}; nothing was written")
    arr = np.asarray(vectors, dtype=np.float64)
    return arr / np.linalg.norm(arr, axis=1, keepdims=True)


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> bool:
    for s1, e1 in a:
        for s2, e2 in b:
            if (s1 == e1 and s2 == e2 and abs(s1 - s2) < 1e-3) or (s1 < e2 and s2 < e1):
                return True
    return False


def cannot_link(clusters: Sequence[ClusterQuery]) -> set[frozenset[int]]:
    """Pairs of cluster labels seen at the same instant: different people by construction."""
    pairs: set[frozenset[int]] = set()
    for i, a in enumerate(clusters):
        for b in clusters[i + 1:]:
            if _overlap(a.spans, b.spans):
                pairs.add(frozenset((a.label, b.label)))
    return pairs


def decide(
    clusters: Sequence[ClusterQuery],
    candidates: dict[int, dict[int, float]],
    threshold: float,
    forbidden: set[frozenset[int]],
) -> dict[int, tuple[int | None, float | None]]:
    """Pure decision: cluster label → (matched entity id or None for "create", exact score).

    `candidates` holds, per cluster label, the exact score (query mean · stored centroid) of each candidate
    entity, as `identity/{kind}_match` computes it. Larger clusters decide first; a cluster may also match a new
    entity created for an earlier cluster of the same clip (negative placeholder ids -1, -2, ... in creation
    order), and never an entity already taken by a co-occurring cluster.
    """
    order = sorted(clusters, key=lambda c: (-len(c.quality), c.label))
    taken: dict[int, list[int]] = {}  # entity (or placeholder) → labels assigned to it
    new_centroids: dict[int, np.ndarray] = {}
    out: dict[int, tuple[int | None, float | None]] = {}
    for cluster in order:
        q = cluster.query_mean
        scored = [(float(score), eid) for eid, score in candidates.get(cluster.label, {}).items()]
        scored += [(float(q @ c), pid) for pid, c in new_centroids.items()]
        scored = [s for s in scored if s[0] >= threshold]
        scored.sort(key=lambda s: (-s[0], s[1]))
        choice: tuple[int | None, float | None] = (None, None)
        for score, eid in scored:
            if any(frozenset((cluster.label, other)) in forbidden for other in taken.get(eid, [])):
                continue
            choice = (eid, score)
            break
        picked = choice[0]
        if picked is None:
            picked = -(len(new_centroids) + 1)
            new_centroids[picked] = q
        taken.setdefault(picked, []).append(cluster.label)
        out[cluster.label] = (picked, choice[1]) if picked >= 0 else (picked, None)
    return out


def _face_queries(ckey: str, clusters: Sequence[FaceCluster], dim: int, top: int) -> list[ClusterQuery]:
    queries = []
    for c in clusters:
        vecs = unit_rows([o.embedding for o in c.observations], dim, f"face cluster {c.label}")
        quality = [o.quality for o in c.observations]
        best = sorted(range(len(quality)), key=lambda i: (-c.observations[i].det_score, -quality[i], i))[:top]
        queries.append(ClusterQuery(
            c.label, vecs, quality, [f"{ckey}#f{c.label}#{i}" for i in range(len(quality))],
            [(o.frame_time_s, o.frame_time_s) for o in c.observations], best))
    return queries


def _voice_queries(ckey: str, clusters: Sequence[VoiceCluster], dim: int, top: int) -> list[ClusterQuery]:
    queries = []
    for c in clusters:
        vecs = unit_rows([u.embedding for u in c.utterances], dim, f"voice cluster {c.label}")
        quality = [u.quality for u in c.utterances]
        best = sorted(range(len(quality)), key=lambda i: (-quality[i], i))[:top]
        queries.append(ClusterQuery(
            c.label, vecs, quality, [f"{ckey}#v{c.label}#{i}" for i in range(len(quality))],
            [(u.start_s, u.end_s) for u in c.utterances], best))
    return queries


def _cluster_queries(ckey: str, clusters: Sequence[FaceCluster | VoiceCluster], dim: int,
                     top: int) -> list[ClusterQuery]:
    """One query per cluster, by the cluster's type (a clip resolves faces or voices, never both at once)."""
    return [(_face_queries(ckey, [c], dim, top) if isinstance(c, FaceCluster)
             else _voice_queries(ckey, [c], dim, top))[0] for c in clusters]


def _observation_rows(kind: Kind, clusters: Sequence[FaceCluster | VoiceCluster],
                      queries: Sequence[ClusterQuery], refs: dict[int, int]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for cluster, q in zip(clusters, queries, strict=True):
        items = cluster.observations if isinstance(cluster, FaceCluster) else cluster.utterances
        for i, item in enumerate(items):
            row = item.model_dump()
            # candidate: offered as an exemplar. The exemplar set is always the best `cap` candidates, so after
            # a clip is deleted it can be rebuilt exactly from the candidates that remain.
            row.update(obs_key=q.obs_keys[i], label=cluster.label, ref=refs[cluster.label],
                       embedding=q.vectors[i].tolist(), candidate=i in q.top)
            if kind == "face":
                row["bbox"] = list(row["bbox"])
            rows.append(row)
    return rows


def _entity_rows(queries: Sequence[ClusterQuery], refs: dict[int, int]) -> list[dict[str, Any]]:
    """Per touched entity (existing id or placeholder), the exemplars its clusters offer; merged on the server."""
    offered: dict[int, list[dict[str, Any]]] = {}
    for q in queries:
        offered.setdefault(refs[q.label], []).extend(
            {"q": float(q.quality[i]), "o": q.obs_keys[i], "v": q.vectors[i].astype(float).tolist()} for i in q.top)
    return [{"ref": ref, "new": new} for ref, new in offered.items()]


def _pair_rows(queries: Sequence[ClusterQuery], refs: dict[int, int]) -> list[dict[str, int]]:
    """Co-occurring clusters as entity-reference pairs (ordered by id and deduplicated on the server)."""
    pairs = {tuple(sorted((refs[a], refs[b]))) for a, b in map(tuple, cannot_link(queries))}
    return [{"a": a, "b": b} for a, b in sorted(pairs)]


def resolve(
    tx: Tx,
    settings: Settings,
    kind: Kind,
    source_id: str,
    clip_index: int,
    clusters: Sequence[FaceCluster] | Sequence[VoiceCluster],
) -> tuple[list[Resolution], list[int]]:
    """Runs inside one write transaction, in two statements; returns the resolutions and the created entity ids."""
    ident = settings.identity
    dim = ident.face_dim if kind == "face" else ident.voice_dim
    cap = ident.max_face_exemplars if kind == "face" else ident.max_voice_exemplars
    threshold = settings.face_match_threshold if kind == "face" else settings.voice_match_threshold
    ckey = clip_key(source_id, clip_index)
    labels = [c.label for c in clusters]
    if len(set(labels)) != len(labels):
        raise InvalidInputError(f"{kind} clusters of clip {ckey} repeat a label: {labels}")

    top = ident.exemplars_per_cluster
    # Embeddings of the wrong size are reported after the clip check and the replay of an already resolved clip,
    # the order in which the former one-query-per-step version found them.
    invalid: InvalidInputError | None = None
    try:
        queries = _cluster_queries(ckey, clusters, dim, top)
    except InvalidInputError as exc:
        queries, invalid = [], exc
    params = [{"label": q.label, "mean": q.query_mean.astype(float).tolist(),
               "unit": (q.query_mean / np.linalg.norm(q.query_mean)).astype(float).tolist()} for q in queries]
    # The index cosine bounds the exact score from above (identity/match.cypher.tmpl, step 5) unless the index
    # quantizes its vectors or the threshold is not positive.
    exact_index = not settings.vector_index.quantization and threshold > 0
    found = tx.single(_MATCH[kind], source_id=source_id, clip_index=clip_index, queries=params,
                      k=ident.candidates, threshold=threshold, prune_below=threshold - 1e-6 if exact_index else None)
    if found is None or not found["clip_found"]:
        raise NotFoundError(f"clip {ckey} does not exist; register it with upsert_clip before resolving {kind}s")
    done = {row["label"]: row["entity_id"] for row in found["done"]}
    if done:
        previous = [Resolution(label=lab, entity_id=eid, created=False, score=None)
                    for lab, eid in sorted(done.items())]
        return previous, []
    if invalid is not None:
        raise invalid
    if not clusters:
        return [], []

    candidates: dict[int, dict[int, float]] = {}
    for row in found["scores"]:
        candidates.setdefault(row["label"], {})[row["entity_id"]] = row["score"]
    decisions = decide(queries, candidates, threshold, cannot_link(queries))
    # Entity references: an existing id, or -1, -2, ... for the entities this clip creates (ids allocated on write).
    refs = {label: eid for label, (eid, _) in decisions.items() if eid is not None}
    n_new = len({ref for ref in refs.values() if ref < 0})
    write = {"source_id": source_id, "clip_index": clip_index, "clip_key": ckey, "n_new": n_new, "dim": dim,
             "cap": cap, "entities": _entity_rows(queries, refs),
             "observations": _observation_rows(kind, clusters, queries, refs)}
    if kind == "face":
        write["pairs"] = _pair_rows(queries, refs)
    row = tx.single(_WRITE[kind], **write)
    first = int(row["first"]) if n_new and row is not None else 0
    mapping = {label: ref if ref >= 0 else first - ref - 1 for label, ref in refs.items()}
    created = list(range(first, first + n_new)) if n_new else []
    return [Resolution(label=label, entity_id=mapping[label], created=refs[label] < 0,
                       score=decisions[label][1]) for label in sorted(mapping)], created
