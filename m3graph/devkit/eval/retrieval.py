"""`m3graph eval retrieval`: does memory search find the evidence?

On any question set whose questions name their evidence (turn ids such as "D3:7"), each conversation is
stored as a video whose sessions are clips and whose turns are episodic memories carrying their turn id in
`source_ids`; then every question is asked of the product's own search calls over the real graph and scored:

* all-evidence clip recall@k: the top-k clips of `search_clip` hold every evidence turn;
* evidence-turn recall@k: the share of evidence turns among the top-k memories of `search_node`.

Baselines are computed in the same run over exactly the memories the product searches (read back from the
graph): Okapi BM25 (over turns for node recall, over whole sessions for clip recall) and an exact cosine scan
in numpy (the reference's ranking: a clip scores its best memory). Latency is reported as graph time given the
query vector and end to end (query embedding included). Questions without evidence (LoCoMo's category 5,
adversarial: the right answer is that it was never said) cannot be scored for recall and are left out.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from m3graph.embedding import query_embed
from m3graph.errors import InvalidInputError
from m3graph.graphdb.query_text import STOP_WORDS
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.types import ClipResult
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.locomo import load_locomo
from m3graph.ingest.chat.model import Conversation

if TYPE_CHECKING:
    from m3graph.embedding import TextEmbedder
    from m3graph.graphdb.store import MemoryGraph

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
NO_EVIDENCE_CATEGORIES = frozenset({5})
_TURN_ID = re.compile(r"D(\d+):(\d+)")
_WORD = re.compile(r"\w+", re.UNICODE)


# -- data -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    source_id: str
    question: str
    evidence: tuple[str, ...]
    category: int


def load_dataset(path: Path, max_sessions: int | None = None) -> tuple[Conversation, list[Question]]:
    """One LoCoMo-format file through the chat loader (turns only: the authors' summaries leak answers)."""
    conv, questions = load_locomo(path)
    if max_sessions is not None:
        conv = replace(conv, sessions=conv.sessions[:max_sessions])
    return conv, [Question(conv.source_id, q.question, q.evidence, q.category) for q in questions]


def ingest(graph: MemoryGraph, embedder: TextEmbedder, conv: Conversation) -> int:
    """Sessions as clips, turns as episodic memories with their turn ids (the chat ingestion; idempotent:
    sessions already stored are skipped). Returns the number of turns written."""
    return ingest_conversation(graph, conv, embedder).turns


# -- baselines --------------------------------------------------------------------------------------------
def tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


class BM25:
    """Okapi BM25 (k1 = 1.5, b = 0.75, the usual defaults) over lowercase words without stop words."""

    def __init__(self, docs: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(tokens(d)) for d in docs]
        self.lengths = np.asarray([sum(d.values()) for d in self.docs], dtype=np.float64)
        self.avgdl = float(self.lengths.mean()) if len(self.docs) else 0.0
        df: Counter[str] = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {t: math.log((n - f + 0.5) / (f + 0.5) + 1.0) for t, f in df.items()}

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.docs))
        norm = self.k1 * (1 - self.b + self.b * self.lengths / max(self.avgdl, 1e-9))
        for term in set(tokens(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            tf = np.asarray([d.get(term, 0) for d in self.docs], dtype=np.float64)
            out += idf * tf * (self.k1 + 1) / (tf + norm)
        return out

    def top(self, query: str, k: int) -> list[int]:
        s = self.scores(query)
        order = np.lexsort((np.arange(len(s)), -s))
        return [int(i) for i in order[:k] if s[i] > 0]


@dataclass
class Corpus:
    """One conversation's memories as the graph holds them (what every method ranks)."""

    source_id: str
    memory_ids: list[str]
    clips: np.ndarray  # clip index per memory
    sources: list[tuple[str, ...]]
    vectors: np.ndarray  # unit rows
    turn_clip: dict[str, int]
    bm25_turns: BM25
    clip_ids: list[int]
    bm25_clips: BM25

    @classmethod
    def read(cls, graph: MemoryGraph, source_id: str) -> Corpus:
        rows = graph.ex.read("eval/memory_vectors", source_id=source_id)
        if not rows:
            raise InvalidInputError(f"video {source_id} has no memories to evaluate")
        vectors = np.asarray([r["embedding"] for r in rows], dtype=np.float64)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        clips = np.asarray([r["clip_index"] for r in rows])
        turn_clip = {s: int(r["clip_index"]) for r in rows for s in r["source_ids"] or ()}
        clip_ids = sorted(set(clips.tolist()))
        clip_docs = [" ".join(r["text"] for r in rows if r["clip_index"] == c) for c in clip_ids]
        return cls(source_id, [r["memory_id"] for r in rows], clips, [tuple(r["source_ids"] or ()) for r in rows],
                   vectors, turn_clip, BM25([r["text"] for r in rows]), clip_ids, BM25(clip_docs))

    def exact_nodes(self, query: np.ndarray, k: int) -> list[int]:
        s = self.vectors @ query
        return [int(i) for i in np.lexsort((np.arange(len(s)), -s))[:k]]

    def exact_clips(self, query: np.ndarray, k: int) -> list[int]:
        s = self.vectors @ query
        best: dict[int, float] = {}
        for c, v in zip(self.clips.tolist(), s.tolist(), strict=True):
            best[c] = max(best.get(c, -2.0), v)
        return sorted(best, key=lambda c: (-best[c], c))[:k]

    def turns_of(self, rows: Iterable[int]) -> set[str]:
        return {t for i in rows for t in self.sources[i]}


# -- scoring ----------------------------------------------------------------------------------------------
def clip_recall(evidence_clips: set[int], found: Iterable[int]) -> float:
    return 1.0 if evidence_clips <= set(found) else 0.0


def turn_recall(evidence: set[str], found: set[str]) -> float:
    return len(evidence & found) / len(evidence)


def _summary(seconds: Sequence[float]) -> dict[str, float]:
    ms = np.asarray(seconds) * 1000.0
    return {"p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)), "n": len(ms)}


METHODS_CLIP = ("hybrid", "vector", "exact_cosine", "bm25")
METHODS_NODE = ("hybrid", "vector", "exact_cosine", "bm25")


@dataclass
class RetrievalReport:
    clip_k: int
    node_k: int
    text_model: str
    floor: float
    vector_weight: float = 0.0  # the hybrid ranking's vector share (per text model unless configured)
    questions: int = 0
    excluded: dict[str, int] = field(default_factory=dict)
    clip: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # method -> category -> values
    node: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    latency: dict[str, list[float]] = field(default_factory=dict)
    cosines: dict[str, list[float]] = field(default_factory=dict)

    def add(self, table: dict[str, dict[str, list[float]]], method: str, category: str, value: float) -> None:
        table.setdefault(method, {}).setdefault(category, []).append(value)
        table[method].setdefault("all", []).append(value)

    def as_dict(self) -> dict[str, Any]:
        def means(table: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
            return {m: {c: float(np.mean(v)) for c, v in sorted(cats.items())} for m, cats in table.items()}

        counts = {c: len(v) for c, v in self.clip.get("hybrid", {}).items()}
        cos = {name: {f"p{p}": float(np.percentile(v, p)) for p in (5, 10, 25, 50, 75, 90, 95, 99)}
               for name, v in self.cosines.items() if v}
        return {"clip_k": self.clip_k, "node_k": self.node_k, "text_model": self.text_model, "floor": self.floor,
                "vector_weight": self.vector_weight,
                "questions": self.questions, "counts": counts, "excluded": self.excluded,
                f"clip_all_evidence_recall@{self.clip_k}": means(self.clip),
                f"evidence_turn_recall@{self.node_k}": means(self.node),
                "latency": {name: _summary(v) for name, v in self.latency.items() if v},
                "cosine_percentiles": cos}

    def format(self) -> str:
        d = self.as_dict()
        cats = sorted(d["counts"], key=lambda c: (c == "all", c))
        lines = [f"text model {self.text_model}, vector floor {self.floor:.2f}, vector weight "
                 f"{self.vector_weight:.2f}; {self.questions} questions scored "
                 f"(excluded: {', '.join(f'{k} {v}' for k, v in self.excluded.items()) or 'none'})"]
        for title, key, methods in ((f"all-evidence clip recall@{self.clip_k}", f"clip_all_evidence_recall@"
                                     f"{self.clip_k}", METHODS_CLIP),
                                    (f"evidence-turn recall@{self.node_k}", f"evidence_turn_recall@{self.node_k}",
                                     METHODS_NODE)):
            lines.append(f"\n{title}")
            heads = [f"{c} ({d['counts'][c]})" for c in cats]
            lines.append(f"  {'method':<14}" + "".join(f"{h:>20}" for h in heads))
            for m in methods:
                if m in d[key]:
                    lines.append(f"  {m:<14}" + "".join(f"{d[key][m].get(c, float('nan')):>20.3f}" for c in cats))
        lines.append("\nlatency (ms)      p50      p95")
        for name, s in d["latency"].items():
            lines.append(f"  {name:<28}{s['p50_ms']:>8.1f} {s['p95_ms']:>8.1f}")
        if d["cosine_percentiles"]:
            lines.append("\nquestion -> memory cosine percentiles (calibrates the vector floor)")
            for name, p in d["cosine_percentiles"].items():
                lines.append(f"  {name:<14}" + " ".join(f"{k} {v:.3f}" for k, v in p.items()))
        return "\n".join(lines)


def _found_clips(results: Sequence[ClipResult]) -> list[int]:
    return [r.clip_index for r in results]


def _found_turns(results: Sequence[ClipResult]) -> set[str]:
    return {s for r in results for m in r.memories for s in m.source_ids}


def evaluate(graph: MemoryGraph, embedder: TextEmbedder, questions: Sequence[Question], clip_k: int = 2,
             node_k: int = 10, progress: Callable[[int, int], None] | None = None,
             warmup: int = 5) -> RetrievalReport:
    """Scores every question with evidence; the product path and both baselines in one pass."""
    settings = graph.settings
    report = RetrievalReport(clip_k, node_k, settings.text_model.name, settings.search_floor,
                             settings.search_vector_weight)
    corpora: dict[str, Corpus] = {}
    scored: list[tuple[Question, Corpus, set[str], set[int]]] = []
    excluded: Counter[str] = Counter()
    for q in questions:
        if q.category in NO_EVIDENCE_CATEGORIES:
            excluded[f"category {q.category} ({CATEGORIES[q.category]}, no evidence)"] += 1
            continue
        corpus = corpora.get(q.source_id) or corpora.setdefault(q.source_id, Corpus.read(graph, q.source_id))
        evidence = {f"D{m.group(1)}:{m.group(2)}" for e in q.evidence for m in _TURN_ID.finditer(e)}
        evidence &= set(corpus.turn_clip)
        if not evidence:
            excluded["evidence ids not among the stored turns"] += 1
            continue
        scored.append((q, corpus, evidence, {corpus.turn_clip[t] for t in evidence}))
    report.excluded = dict(excluded)
    search = graph.search
    embed_query = query_embed(embedder)  # bge: queries take the model's instruction, memories never
    for q, _, _, _ in scored[:warmup]:  # the first queries pay for plan caching and page faults
        v = embed_query([q.question])[0].tolist()
        search.search(SearchSpec(v, videos=[q.source_id], k=clip_k, text=q.question))
        search.search(SearchSpec(v, mode="node", videos=[q.source_id], k=node_k, text=q.question))
    lat = report.latency
    for i, (q, corpus, evidence, ev_clips) in enumerate(scored):
        cat = f"{q.category} {CATEGORIES.get(q.category, '?')}"
        t0 = time.perf_counter()
        qv = embed_query([q.question])[0]
        t1 = time.perf_counter()
        vec = qv.tolist()
        clips = search.search(SearchSpec(vec, videos=[q.source_id], k=clip_k, text=q.question))
        t2 = time.perf_counter()
        nodes = search.search(SearchSpec(vec, mode="node", videos=[q.source_id], k=node_k, text=q.question))
        t3 = time.perf_counter()
        lat.setdefault("query embedding", []).append(t1 - t0)
        lat.setdefault("search_clip (graph)", []).append(t2 - t1)
        lat.setdefault("search_node (graph)", []).append(t3 - t2)
        lat.setdefault("search_clip end to end", []).append(t2 - t0)
        lat.setdefault("search_node end to end", []).append(t3 - t2 + t1 - t0)
        v_clips = search.search(SearchSpec(vec, videos=[q.source_id], k=clip_k))
        t4 = time.perf_counter()
        v_nodes = search.search(SearchSpec(vec, mode="node", videos=[q.source_id], k=node_k))
        lat.setdefault("vector-only search_clip (graph)", []).append(t4 - t3)
        qn = np.asarray(qv, dtype=np.float64) / np.linalg.norm(qv)
        t5 = time.perf_counter()
        bm_clips = [corpus.clip_ids[j] for j in corpus.bm25_clips.top(q.question, clip_k)]
        bm_nodes = corpus.turns_of(corpus.bm25_turns.top(q.question, node_k))
        lat.setdefault("bm25 in numpy (clip + node)", []).append(time.perf_counter() - t5)
        t6 = time.perf_counter()
        ex_clips = corpus.exact_clips(qn, clip_k)
        ex_nodes = corpus.turns_of(corpus.exact_nodes(qn, node_k))
        lat.setdefault("exact cosine in numpy (clip + node)", []).append(time.perf_counter() - t6)
        for method, found in (("hybrid", _found_clips(clips)), ("vector", _found_clips(v_clips)),
                              ("exact_cosine", ex_clips), ("bm25", bm_clips)):
            report.add(report.clip, method, cat, clip_recall(ev_clips, found))
        for method, turns in (("hybrid", _found_turns(nodes)), ("vector", _found_turns(v_nodes)),
                              ("exact_cosine", ex_nodes), ("bm25", bm_nodes)):
            report.add(report.node, method, cat, turn_recall(evidence, turns))
        sims = corpus.vectors @ qn
        is_ev = np.asarray([bool(set(s) & evidence) for s in corpus.sources])
        report.cosines.setdefault("evidence", []).extend(sims[is_ev].tolist())
        report.cosines.setdefault("other", []).extend(sims[~is_ev].tolist())
        if progress:
            progress(i + 1, len(scored))
    report.questions = len(scored)
    return report


def write_report(report: RetrievalReport, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
    return path


__all__ = ["BM25", "Corpus", "Question", "RetrievalReport", "evaluate", "ingest", "load_dataset", "write_report"]
