"""The reference's retrieval as a numpy linear scan (m3-agent-reference.md §6.4-§6.5), and exact ground truth.

Per query the research code scores *every* text node by cosine, groups node scores by clip (clip score = max),
keeps clips with score >= threshold and returns the top k. This is the vectorised form of that: one float32
matrix-vector product over pre-normalised rows, `np.maximum.reduceat` over the contiguous clip ranges, and an
`argpartition` for the top k. It is the cheapest honest form of the scan (no per-node Python loop, no list to
array conversion per query), so a speed-up measured against it is a lower bound.
"""

from __future__ import annotations

import numpy as np

from bench.synth import Corpus


class LinearScan:
    """Brute-force clip ranking over a set of memories stored clip by clip."""

    def __init__(self, embeddings: np.ndarray, clip_start: np.ndarray, clip_ids: np.ndarray) -> None:
        self.emb = np.ascontiguousarray(embeddings, dtype=np.float32)
        self.starts = np.ascontiguousarray(clip_start[:-1])
        self.clip_ids = clip_ids  # global clip number of each local clip

    @classmethod
    def full(cls, corpus: Corpus) -> LinearScan:
        return cls(corpus.embeddings, corpus.clip_start, np.arange(corpus.n_clips))

    @classmethod
    def of_videos(cls, corpus: Corpus, videos: np.ndarray) -> LinearScan:
        """The memories of some videos only (what a video filter leaves to scan)."""
        clips = np.flatnonzero(np.isin(corpus.clip_video, videos))
        sizes = corpus.clip_start[clips + 1] - corpus.clip_start[clips]
        rows = np.concatenate([np.arange(corpus.clip_start[c], corpus.clip_start[c + 1]) for c in clips])
        starts = np.concatenate([[0], np.cumsum(sizes)])
        return cls(corpus.embeddings[rows], starts, clips)

    def rank_clips(self, query: np.ndarray, k: int = 2, threshold: float = 0.5) -> list[tuple[int, float]]:
        """(global clip number, cosine) of the k best clips with score >= threshold, best first."""
        q = (query / np.linalg.norm(query)).astype(np.float32)
        scores = self.emb @ q
        clip_max = np.maximum.reduceat(scores, self.starts)
        cand = np.flatnonzero(clip_max >= threshold)
        if cand.size > k:
            cand = cand[np.argpartition(-clip_max[cand], k - 1)[:k]]
        cand = cand[np.argsort(-clip_max[cand], kind="stable")]
        return [(int(self.clip_ids[c]), float(clip_max[c])) for c in cand]


def exact_topk(embeddings: np.ndarray, queries: np.ndarray, k: int, chunk: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """(rows, scores) of the exact top k memories per query, best first; float32 like the index stores."""
    rows = np.empty((len(queries), k), dtype=np.int64)
    scores = np.empty((len(queries), k), dtype=np.float32)
    for lo in range(0, len(queries), chunk):
        sims = embeddings @ queries[lo:lo + chunk].T  # (n, chunk)
        part = np.argpartition(-sims, k - 1, axis=0)[:k]  # (k, chunk)
        for j in range(part.shape[1]):
            idx = part[:, j]
            order = np.argsort(-sims[idx, j], kind="stable")
            rows[lo + j] = idx[order]
            scores[lo + j] = sims[idx[order], j]
    return rows, scores


def recall_at_k(found: list[int], truth_rows: np.ndarray, truth_scores: np.ndarray, found_scores: np.ndarray,
                tol: float = 1e-5) -> float:
    """Share of the exact top k that was returned; a returned row tied with the k-th exact score counts as right."""
    k = len(truth_rows)
    kth = float(truth_scores[-1])
    truth = set(int(r) for r in truth_rows)
    hits = sum(1 for r, s in zip(found[:k], found_scores[:k], strict=True) if int(r) in truth or float(s) >= kth - tol)
    return min(hits, k) / k
