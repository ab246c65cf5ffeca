"""Synthetic, clustered memory graphs and face sets for the benchmarks (deterministic for a seed).

Text embeddings are a mixture of gaussians on the unit sphere: a few thousand topic centres that share a mild
common direction (real sentence embeddings are anisotropic: unrelated texts have cosine ~0.1, not 0), each
memory a centre plus isotropic noise, normalised. Every video draws a handful of topics and every clip one or
two of its video's topics, so neighbours cluster inside videos and clips as real memories do. Memories are
stored in (video, clip, order) order, so a clip's memories are one contiguous row range.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

CHUNK = 65_536  # rows generated at a time, to keep float64 temporaries small at 10^6


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@dataclass(frozen=True)
class CorpusSpec:
    n: int
    dim: int = 384
    clips_per_video: int = 40  # 20-minute videos of 30-s clips
    mean_per_clip: int = 20
    topics: int | None = None  # default: n // 250, within [100, 4000]
    topics_per_video: int = 8
    episodic_share: float = 0.7
    anisotropy: float = 0.35  # weight of the shared direction in every topic centre
    seed: int = 7

    @property
    def n_topics(self) -> int:
        return self.topics or min(4000, max(100, self.n // 250))


@dataclass
class Corpus:
    spec: CorpusSpec
    embeddings: np.ndarray  # (n, dim) float32 unit rows, ordered by (video, clip, order)
    topic: np.ndarray  # (n,) topic of each memory
    clip_start: np.ndarray  # (n_clips + 1,) row offsets of each clip
    clip_video: np.ndarray  # (n_clips,) video number of each clip
    clip_index: np.ndarray  # (n_clips,) clip index within its video
    video_clips: np.ndarray  # (n_videos,) clips per video
    centres: np.ndarray  # (topics, dim) float32
    spread: np.ndarray  # (topics,) noise scale per topic

    @property
    def n(self) -> int:
        return int(self.embeddings.shape[0])

    @property
    def n_clips(self) -> int:
        return int(self.clip_video.shape[0])

    @property
    def n_videos(self) -> int:
        return int(self.video_clips.shape[0])

    def clip_of_rows(self) -> np.ndarray:
        """(n,) global clip number of every row."""
        return np.repeat(np.arange(self.n_clips), np.diff(self.clip_start))

    def video_of_rows(self) -> np.ndarray:
        return self.clip_video[self.clip_of_rows()]


def source_id(v: int) -> str:
    return f"bench-v{v:05d}"


def clip_key(v: int, c: int) -> str:
    return f"{source_id(v)}#{c}"


def memory_text(row: int, kind: str, topic: int, v: int, c: int) -> str:
    what = "event" if kind == "episodic" else "fact"
    return f"Synthetic {kind} {what} {row} about topic {topic} in clip {c} of video {v}."


def memory_id(v: int, c: int, order: int, kind: str, text: str) -> str:
    """The product's id scheme (memories.py): episodic by order, semantic by a digest of the text."""
    if kind == "episodic":
        return f"{clip_key(v, c)}#e{order}"
    return f"{clip_key(v, c)}#s{hashlib.sha1(text.encode('utf-8')).hexdigest()[:12]}"


def episodic_count(size: int, share: float) -> int:
    return max(1, round(size * share))


def make_corpus(spec: CorpusSpec) -> Corpus:
    rng = np.random.default_rng(spec.seed)
    d, t = spec.dim, spec.n_topics
    common = unit(rng.standard_normal(d))
    centres = unit(unit(rng.standard_normal((t, d))) + spec.anisotropy * common).astype(np.float32)
    # Same-topic memories then have cosine ~1/(1+s^2): 0.45-0.67, near duplicates come from the queries.
    spread = rng.uniform(0.7, 1.1, t).astype(np.float32)

    sizes: list[int] = []
    while sum(sizes) < spec.n:
        sizes.append(int(rng.integers(spec.mean_per_clip - 6, spec.mean_per_clip + 7)))
    sizes[-1] -= sum(sizes) - spec.n
    if sizes[-1] <= 0:
        sizes.pop()
        sizes[-1] += spec.n - sum(sizes)
    n_clips = len(sizes)
    n_videos = math.ceil(n_clips / spec.clips_per_video)
    clip_video = np.arange(n_clips) // spec.clips_per_video
    clip_index = np.arange(n_clips) % spec.clips_per_video
    video_clips = np.bincount(clip_video, minlength=n_videos)
    clip_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    video_topics = rng.integers(0, t, (n_videos, spec.topics_per_video))
    pick = rng.integers(0, spec.topics_per_video, (n_clips, 2))
    clip_topics = video_topics[clip_video[:, None], pick]  # (n_clips, 2)
    clip_of_row = np.repeat(np.arange(n_clips), sizes)
    topic = clip_topics[clip_of_row, rng.integers(0, 2, spec.n)]

    emb = np.empty((spec.n, d), dtype=np.float32)
    for lo in range(0, spec.n, CHUNK):
        hi = min(spec.n, lo + CHUNK)
        tt = topic[lo:hi]
        noise = rng.standard_normal((hi - lo, d), dtype=np.float32) / np.float32(math.sqrt(d))
        emb[lo:hi] = unit(centres[tt] + spread[tt, None] * noise)
    return Corpus(spec, emb, topic, clip_start, clip_video, clip_index, video_clips, centres, spread)


@dataclass(frozen=True)
class QuerySet:
    vectors: np.ndarray  # (q, dim) float32 unit rows
    kind: list[str]  # "perturbed" (a memory plus noise, cos ~0.9) or "fresh" (a new draw from a topic)
    rows: np.ndarray  # the memory each query was derived from (perturbed) or whose topic it was drawn from


def make_queries(corpus: Corpus, count: int, seed: int) -> QuerySet:
    rng = np.random.default_rng(seed)
    d = corpus.spec.dim
    half = count // 2
    rows = rng.integers(0, corpus.n, count)
    noise = rng.standard_normal((count, d)).astype(np.float32) / np.float32(math.sqrt(d))
    perturbed = unit(corpus.embeddings[rows[:half]] + 0.5 * noise[:half])
    topics = corpus.topic[rows[half:]]
    fresh = unit(corpus.centres[topics] + corpus.spread[topics, None] * noise[half:])
    vectors = np.vstack([perturbed, fresh]).astype(np.float32)
    return QuerySet(vectors, ["perturbed"] * half + ["fresh"] * (count - half), rows)


@dataclass
class FaceSet:
    """Face entities as identity/write.cypher.tmpl writes for faces them, plus the identity vector of each person."""

    identities: np.ndarray  # (n, dim) float64 unit rows
    exemplars: list[np.ndarray]  # per entity (k, dim) float64 unit rows
    quality: list[np.ndarray]
    noise: float  # observation = unit(identity + noise * gaussian / sqrt(dim))

    @property
    def n(self) -> int:
        return int(self.identities.shape[0])


def face_noise(threshold: float) -> float:
    """The noise scale at which two observations of one person score (1 + threshold) / 2 on average.

    Why: a returning person must clear the product's identity threshold (mean pairwise cosine) with a margin, or
    the benchmark times a "returning" path that never matches. Two observations unit(x + s·n1), unit(x + s·n2)
    of a unit identity x, with n ~ N(0, I/dim), have cosine ≈ 1 / (1 + s²) in high dimension; different people
    score ≈ 0.
    """
    target = (1.0 + threshold) / 2.0
    if not 0.0 < target < 1.0:
        raise ValueError(f"threshold {threshold} leaves no room for same-person noise")
    return math.sqrt(1.0 / target - 1.0)


def make_faces(n: int, dim: int, seed: int, threshold: float, max_exemplars: int = 10) -> FaceSet:
    rng = np.random.default_rng(seed)
    scale = face_noise(threshold)
    ids = unit(rng.standard_normal((n, dim)))
    counts = rng.integers(1, max_exemplars + 1, n)
    exemplars, quality = [], []
    for i in range(n):
        noise = rng.standard_normal((counts[i], dim)) / math.sqrt(dim)
        exemplars.append(unit(ids[i] + scale * noise))
        quality.append(np.sort(rng.uniform(0.5, 1.0, counts[i]))[::-1])
    return FaceSet(ids, exemplars, quality, scale)


def observations_of(identity: np.ndarray, count: int, rng: np.random.Generator, scale: float) -> np.ndarray:
    noise = rng.standard_normal((count, identity.shape[0])) / math.sqrt(identity.shape[0])
    return unit(identity + scale * noise)
