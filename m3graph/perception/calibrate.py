"""Identity thresholds calibrated on real labelled people (issue 10).

Thresholds set on three photos and espeak voices do not transfer to real media, so they are measured here on
labelled data: the shared identity set (61 face photos of 13 people; LibriSpeech read speech, 10 speakers x 10)
and, fetched by `scripts/fetch_identity_media.sh`, a real phone call and 15 AMI meeting clips from the
`pyannote-audio` packages. For each embedder this module gives:

* the same/different cosine distributions of all labelled pairs, the equal-error rate (EER) and the threshold
  that maximises balanced accuracy, with its margins (how far the nearest same and different pairs lie);
* identity precision/recall, pairwise and B-cubed, of average-linkage clustering at a threshold (the rule the
  graph's matching and the per-clip clustering use: mean pairwise cosine), swept to pick the clustering threshold.

Everything here is pure numpy except the loaders, which run the configured models.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from m3graph.errors import InvalidInputError

# Cluster labels as the metrics take them: a list, or the array a clustering returns (only len, iteration and
# hashable items are used).
Labels = Sequence[object] | np.ndarray

# ------------------------------------------------------------------------------------------ scores and metrics


@dataclass(frozen=True)
class Separation:
    """How well one cosine threshold separates same-identity pairs from different-identity pairs."""

    n_same: int
    n_diff: int
    same_median: float
    same_p05: float
    diff_median: float
    diff_p95: float
    eer: float
    eer_threshold: float
    threshold: float  # maximises balanced accuracy
    balanced_accuracy: float
    margin_same: float  # 5th percentile of same pairs minus threshold (> 0: 95 % of same pairs clear it)
    margin_diff: float  # threshold minus 95th percentile of different pairs


def pair_scores(vectors: np.ndarray, labels: Sequence[object]) -> tuple[np.ndarray, np.ndarray]:
    """Cosines of all same-label pairs and all different-label pairs (vectors need not be unit)."""
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] != len(labels):
        raise InvalidInputError(f"{v.shape} vectors for {len(labels)} labels")
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    sim = v @ v.T
    lab = np.asarray([str(x) for x in labels])
    iu = np.triu_indices(len(lab), k=1)
    same = lab[iu[0]] == lab[iu[1]]
    return sim[iu][same], sim[iu][~same]


def separation(same: np.ndarray, diff: np.ndarray) -> Separation:
    """EER and the best balanced-accuracy threshold; thresholds are taken midway between observed scores."""
    if same.size == 0 or diff.size == 0:
        raise InvalidInputError("separation needs at least one same and one different pair")
    scores = np.unique(np.concatenate([same, diff]))
    cands = np.concatenate([[scores[0] - 1e-6], (scores[:-1] + scores[1:]) / 2, [scores[-1] + 1e-6]])
    ss, ds = np.sort(same), np.sort(diff)
    frr = np.searchsorted(ss, cands, side="left") / ss.size  # same pairs below the threshold
    far = 1.0 - np.searchsorted(ds, cands, side="left") / ds.size  # different pairs at or above it
    k = int(np.argmin(np.abs(frr - far)))
    bacc = 1.0 - (frr + far) / 2
    best = int(np.argmax(bacc))
    thr = float(cands[best])
    p05, p95 = float(np.percentile(same, 5)), float(np.percentile(diff, 95))
    return Separation(
        n_same=int(same.size), n_diff=int(diff.size), same_median=float(np.median(same)), same_p05=p05,
        diff_median=float(np.median(diff)), diff_p95=p95, eer=float((frr[k] + far[k]) / 2),
        eer_threshold=float(cands[k]), threshold=thr, balanced_accuracy=float(bacc[best]),
        margin_same=p05 - thr, margin_diff=thr - p95,
    )


@dataclass(frozen=True)
class PR:
    precision: float
    recall: float

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def _contingency(pred: Labels, truth: Sequence[object],
                 weights: Sequence[float] | None = None) -> np.ndarray:
    if len(pred) != len(truth):
        raise InvalidInputError(f"{len(pred)} predicted labels for {len(truth)} true labels")
    pi = {p: i for i, p in enumerate(dict.fromkeys(pred))}
    ti = {t: i for i, t in enumerate(dict.fromkeys(truth))}
    table = np.zeros((len(pi), len(ti)), dtype=np.float64)
    w = np.ones(len(pred)) if weights is None else np.asarray(weights, dtype=np.float64)
    for p, t, x in zip(pred, truth, w, strict=True):
        table[pi[p], ti[t]] += x
    return table


def pairwise_pr(pred: Labels, truth: Sequence[object]) -> PR:
    """Pairwise precision/recall: of the pairs put together, how many are one identity, and vice versa.

    A clustering with no pair put together (all singletons) has precision 1 by convention.
    """
    table = _contingency(pred, truth)

    def pairs(x: np.ndarray) -> float:
        return float((x * (x - 1) / 2).sum())

    tp, pp, tt = pairs(table), pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    return PR(1.0 if pp == 0 else tp / pp, 1.0 if tt == 0 else tp / tt)


def bcubed_pr(pred: Labels, truth: Sequence[object]) -> PR:
    """B-cubed precision/recall: per item, the share of its cluster that is its identity, and vice versa."""
    table = _contingency(pred, truth)
    n = table.sum()
    if n == 0:
        return PR(1.0, 1.0)
    sq = np.square(table)
    precision = float((sq.sum(axis=1) / np.maximum(table.sum(axis=1), 1)).sum() / n)
    recall = float((sq.sum(axis=0) / np.maximum(table.sum(axis=0), 1)).sum() / n)
    return PR(precision, recall)


def pooled_groups(windows: Sequence[np.ndarray], labels: Sequence[object], size: int
                  ) -> tuple[np.ndarray, list[object]]:
    """Pooled vectors of disjoint groups of `size` items of one identity (in input order; a remainder is dropped).

    `windows[i]` holds item i's window vectors; a group's vector is the unit mean of all its items' windows, as the
    per-clip pooled second stage (`voices.merge_pooled`) scores clusters. Feed the result to `pair_scores` to get
    the same/different distributions of pooled clusters (issue 10, docs/evaluation.md "Thresholds chosen").
    """
    if size < 1:
        raise InvalidInputError(f"group size must be >= 1, got {size}")
    if len(windows) != len(labels):
        raise InvalidInputError("windows and labels differ in length")
    by_label: dict[object, list[int]] = {}
    for i, label in enumerate(labels):
        by_label.setdefault(label, []).append(i)
    vectors, out_labels = [], []
    for label, items in by_label.items():
        for g in range(0, len(items) - size + 1, size):
            total = np.concatenate([np.asarray(windows[i], dtype=np.float64) for i in items[g : g + size]]).sum(axis=0)
            vectors.append(total / np.linalg.norm(total))
            out_labels.append(label)
    dim = int(np.asarray(windows[0]).shape[-1]) if len(windows) else 0
    return (np.stack(vectors) if vectors else np.empty((0, dim))), out_labels


def average_linkage(vectors: np.ndarray, threshold: float, groups: Sequence[object] | None = None) -> np.ndarray:
    """Average-linkage clusters at `threshold` (mean pairwise cosine), with a cannot-link inside each group.

    `groups` (e.g. the clip of each item) forbid merging two items of one group; None: all items are free. The
    per-clip face clustering is the same algorithm, so its implementation is reused.
    """
    from m3graph.perception.faces import cluster_faces

    v = np.asarray(vectors, dtype=np.float64)
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    ids = list(range(len(v))) if groups is None else [hash(g) for g in groups]
    return cluster_faces(v, ids, threshold)


@dataclass(frozen=True)
class SweepRow:
    threshold: float
    pairwise: PR
    bcubed: PR
    clusters: int


def sweep(vectors: np.ndarray, truth: Sequence[object], thresholds: Iterable[float]) -> list[SweepRow]:
    """Clustering quality at each threshold (the clustering threshold is picked from this)."""
    rows = []
    for thr in thresholds:
        labels = average_linkage(vectors, thr)
        rows.append(SweepRow(round(float(thr), 4), pairwise_pr(labels, truth), bcubed_pr(labels, truth),
                             len(set(labels.tolist()))))
    return rows


def best_row(rows: Sequence[SweepRow]) -> SweepRow:
    """Highest pairwise F1; among ties the highest threshold (the safer one: fewer merges of strangers)."""
    return max(rows, key=lambda r: (round(r.pairwise.f1, 6), r.threshold))


# ------------------------------------------------------------------------------------------ labelled data


@dataclass(frozen=True)
class Turn:
    """One labelled speaker turn of a recording (seconds from its start)."""

    recording: str
    speaker: str
    start_s: float
    end_s: float


def read_rttm(path: Path) -> list[Turn]:
    """SPEAKER lines of an RTTM file: `SPEAKER <file> <chan> <start> <dur> <NA> <NA> <speaker> ...`."""
    turns = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[0] == "SPEAKER":
            start, dur = float(parts[3]), float(parts[4])
            turns.append(Turn(parts[1], parts[7], start, start + dur))
    return turns


def face_identities(faces_dir: Path) -> list[tuple[Path, str]]:
    """(photo, identity) pairs from `identities.csv` (the unlabelled group photos are not in it)."""
    path = Path(faces_dir) / "identities.csv"
    if not path.is_file():
        raise FileNotFoundError(f"face identities not found: {path}")
    with path.open(encoding="utf-8") as fh:
        return [(Path(faces_dir) / row["file"], row["identity"]) for row in csv.DictReader(fh)]


def librispeech_files(voices_dir: Path) -> list[tuple[Path, str]]:
    """(audio file, speaker id) for every FLAC under the LibriSpeech folder; the speaker is the name's first field."""
    files = sorted(Path(voices_dir).rglob("*.flac"))
    if not files:
        raise FileNotFoundError(f"no .flac files under {voices_dir}")
    return [(f, f.name.split("-")[0]) for f in files]


def ami_recordings(media_dir: Path) -> list[tuple[Path, list[Turn]]]:
    """The AMI clips of the pyannote sdist with their RTTM turns (`trñ00.wav` is `trn00` in the RTTM)."""
    data = Path(media_dir) / "tests" / "data"
    turns: dict[str, list[Turn]] = {}
    for rttm in sorted(data.glob("debug.*.rttm")):
        for t in read_rttm(rttm):
            turns.setdefault(t.recording, []).append(t)
    out = []
    for wav in sorted(data.glob("*.wav")):
        key = re.sub(r"[^a-z0-9]", "", wav.stem.replace("ñ", "n").lower())
        match = [k for k in turns if re.sub(r"[^a-z0-9]", "", k.lower()) == key]
        if match:
            out.append((wav, sorted(turns[match[0]], key=lambda t: t.start_s)))
    return out


def phone_call(media_dir: Path) -> tuple[Path, list[Turn]]:
    """The pyannote sample phone call (30 s, two speakers) and its RTTM turns."""
    sample = Path(media_dir) / "pyannote" / "audio" / "sample"
    wav, rttm = sample / "sample.wav", sample / "sample.rttm"
    if not wav.is_file() or not rttm.is_file():
        raise FileNotFoundError(f"{wav} not found: run scripts/fetch_identity_media.sh")
    return wav, sorted(read_rttm(rttm), key=lambda t: t.start_s)


# ------------------------------------------------------------------------------------------ frame-level scoring


FRAME_S = 0.1


def frame_labels(turns: Sequence[tuple[float, float, object]], duration_s: float) -> list[object | None]:
    """One label per 0.1-s frame: the turn covering its centre, None for silence or for overlapping turns."""
    n = int(math.ceil(duration_s / FRAME_S))
    centres = (np.arange(n) + 0.5) * FRAME_S
    out: list[object | None] = [None] * n
    count = np.zeros(n, dtype=np.int64)
    for a, b, label in turns:
        idx = np.nonzero((centres >= a) & (centres < b))[0]
        count[idx] += 1
        for i in idx:
            out[i] = label
    return [None if c != 1 else lab for lab, c in zip(out, count, strict=True)]


def score_frames(pred: Sequence[object | None], truth: Sequence[object | None]) -> tuple[PR, PR, float]:
    """Pairwise and B-cubed P/R over frames both sides label, and the share of true speech frames labelled."""
    both = [(p, t) for p, t in zip(pred, truth, strict=False) if p is not None and t is not None]
    speech = sum(1 for t in truth if t is not None)
    if not both:
        return PR(1.0, 0.0), PR(1.0, 0.0), 0.0
    ps, ts = [p for p, _ in both], [t for _, t in both]
    return pairwise_pr(ps, ts), bcubed_pr(ps, ts), len(both) / max(speech, 1)
