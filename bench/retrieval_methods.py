"""Offline experiments on memory-retrieval ranking, measured with leave-one-conversation-out cross-validation.

Why this exists: the product's hybrid search (m3graph/graphdb/search.py) misses its dev-set targets (clip
recall@2 at least 10 points above session BM25; evidence-turn recall@10 >= 0.75). Trying ranking ideas through
Neo4j is slow and touches code others are editing, so this harness re-implements the product's ranking in numpy
over the LoCoMo dev conversations (same memory texts, same embedder class, Lucene's English analysis emulated
with a Porter stemmer and Lucene's BM25), checks that it reproduces the product's figures, and then scores
general (not per-question) alternatives. Every parameter is chosen by leave-one-conversation-out: fit on two
conversations, score the third, and the held-out figures are what is reported. Nothing here is imported by the
product.

    .venv/bin/python -m bench.retrieval_methods [--data DIR] [--out bench/results/retrieval_methods.json]

`--smoke` (CI): the first two sessions of the three conversations, a few questions each, every method and grid,
embedded by the product's default text model, vectors cached in a scratch directory.

Embeddings are computed once with the product's own embedder and cached under bench/results/ as .npy files (named
by the text model). The figures in docs/evaluation.md ("How the parameters were chosen") are MiniLM's, so
`--text-model` defaults to "packaged"; bench/text_models.py chooses the weight and floor per text model.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.smoke import add_smoke, conversation_slice, scratch
from m3graph.devkit.eval.retrieval import BM25 as EvalBM25
from m3graph.devkit.eval.retrieval import CATEGORIES, NO_EVIDENCE_CATEGORIES
from m3graph.graphdb.query_text import STOP_WORDS
from m3graph.ingest.chat.ingest import turn_line
from m3graph.ingest.chat.locomo import load_locomo

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "conversations"
RESULTS = Path(__file__).resolve().parent / "results"
_TURN_ID = re.compile(r"D(\d+):(\d+)")
_QUERY_WORD = re.compile(r"\w+", re.UNICODE)

# -- Lucene's English analysis ---------------------------------------------------------------------------------
# EnglishAnalyzer: StandardTokenizer -> EnglishPossessiveFilter -> LowerCaseFilter -> StopFilter (the 33 words
# below) -> PorterStemFilter.
_LUCENE_STOP_TEXT = """a an and are as at be but by for if in into is it no not of on or such that the their then
there these they this to was will with"""
LUCENE_ENGLISH_STOP = frozenset(_LUCENE_STOP_TEXT.split())
_LUCENE_TOKEN = re.compile(r"\w+(?:['\u2019.]\w+)*", re.UNICODE)


def _cons(w: str, i: int) -> bool:
    c = w[i]
    if c in "aeiou":
        return False
    if c == "y":
        return i == 0 or not _cons(w, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in the stem."""
    m, prev_vowel = 0, False
    for i in range(len(stem)):
        vowel = not _cons(stem, i)
        if prev_vowel and not vowel:
            m += 1
        prev_vowel = vowel
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _cons(stem, i) for i in range(len(stem)))


def _double_cons(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _cons(w, len(w) - 1)


def _cvc(w: str) -> bool:
    n = len(w)
    return (n >= 3 and _cons(w, n - 1) and not _cons(w, n - 2) and _cons(w, n - 3) and w[-1] not in "wxy")


_STEP2 = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
          ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"),
          ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"),
          ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("logi", "log"))
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""),
          ("ness", ""))
_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism",
          "ate", "iti", "ous", "ive", "ize")


def _first_rule(w: str, rules: Sequence[tuple[str, str]], min_m: int) -> str:
    for suffix, repl in rules:
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            return stem + repl if _measure(stem) > min_m else w
    return w


def porter_stem(w: str) -> str:
    """Martin Porter's stemmer as in the reference implementation (and Lucene's PorterStemmer)."""
    if len(w) <= 2:
        return w
    # step 1a
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    # step 1b
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    else:
        for suffix in ("ed", "ing"):
            if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
                w = w[: -len(suffix)]
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif _double_cons(w) and w[-1] not in "lsz":
                    w = w[:-1]
                elif _measure(w) == 1 and _cvc(w):
                    w += "e"
                break
    # step 1c
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    w = _first_rule(w, _STEP2, 0)
    w = _first_rule(w, _STEP3, 0)
    # step 4
    for suffix in _STEP4:
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                w = stem
            break
    # step 5
    if w.endswith("e"):
        stem = w[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            w = stem
    if w.endswith("ll") and _measure(w) > 1:
        w = w[:-1]
    return w


_STEM_CACHE: dict[str, str] = {}


def stem(word: str) -> str:
    out = _STEM_CACHE.get(word)
    if out is None:
        out = _STEM_CACHE[word] = porter_stem(word)
    return out


def lucene_english(text: str) -> list[str]:
    """Index-side tokens of Lucene's EnglishAnalyzer (approximately: the tokenizer is a regex)."""
    out = []
    for tok in _LUCENE_TOKEN.findall(text.lower()):
        if tok.endswith(("'s", "\u2019s")):
            tok = tok[:-2]
        if tok and tok not in LUCENE_ENGLISH_STOP:
            out.append(stem(tok))
    return out


def query_terms(text: str, extra_stop: frozenset[str] = frozenset()) -> list[str]:
    """The product's `lucene_query_terms` (unique \\w+ words, search.py's stop words dropped), analysed as
    Lucene would analyse each quoted term. Stems are not merged: two words with one stem count twice."""
    words = [w for w in _QUERY_WORD.findall(text.lower())
             if w not in STOP_WORDS and w not in extra_stop and (len(w) > 1 or w.isdigit())]
    return [stem(w) for w in list(dict.fromkeys(words))[:64] if w not in LUCENE_ENGLISH_STOP]


class LuceneBM25:
    """Lucene's BM25Similarity (no (k1 + 1) factor, idf = ln(1 + (N - df + .5) / (df + .5))), exact lengths.

    `stats` (another token list collection) gives the document count and document frequencies when the index
    holds more documents than the ones ranked (the product's full-text index spans every conversation)."""

    def __init__(self, docs: Sequence[list[str]], k1: float = 1.2, b: float = 0.75,
                 stats: Sequence[list[str]] | None = None) -> None:
        self.k1, self.b = k1, b
        self.n = len(docs)
        stat_docs = docs if stats is None else stats
        self.lengths = np.asarray([len(d) for d in docs], dtype=np.float64)
        avgdl = float(np.mean([len(d) for d in stat_docs])) if stat_docs else 1.0
        self.norm = k1 * (1 - b + b * self.lengths / max(avgdl, 1e-9))
        df: Counter[str] = Counter()
        for d in stat_docs:
            df.update(set(d))
        n = len(stat_docs)
        self.idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        post: dict[str, list[tuple[int, int]]] = {}
        for i, d in enumerate(docs):
            for t, c in Counter(d).items():
                post.setdefault(t, []).append((i, c))
        self.post = {t: (np.asarray([i for i, _ in v]), np.asarray([c for _, c in v], dtype=np.float64))
                     for t, v in post.items()}
        self.sets = [set(d) for d in docs]

    def scores(self, terms: Iterable[str]) -> np.ndarray:
        out = np.zeros(self.n)
        for t in terms:
            if t not in self.post:
                continue
            idx, tf = self.post[t]
            out[idx] += self.idf[t] * tf / (tf + self.norm[idx])
        return out


# -- data ------------------------------------------------------------------------------------------------------
@dataclass
class Conv:
    """One conversation as the graph stores it: memories in clip order, with everything the rankings need."""

    name: str
    mem_text: list[str]  # the stored memory text, "Name <speaker_N>: text"
    embed_text: list[str]  # what the product embeds (the tag dropped)
    clip: np.ndarray
    order: np.ndarray
    turn_id: list[str]
    dates: list[str]  # session date per clip
    questions: list[dict[str, Any]] = field(default_factory=list)
    vec: dict[str, np.ndarray] = field(default_factory=dict)  # memory-vector variant -> (n, d)
    qvec: dict[str, np.ndarray] = field(default_factory=dict)  # query-vector variant -> (q, d)
    tokens: list[list[str]] = field(default_factory=list)

    @property
    def n_clips(self) -> int:
        return int(self.clip.max()) + 1


def load_convs(data: Path) -> list[Conv]:
    convs, entity = [], 0
    for path in sorted(data.glob("*.json")):
        conv, questions = load_locomo(path)
        raw = json.loads(path.read_text(encoding="utf-8"))
        ids = {}
        for name in conv.speakers:
            entity += 1
            ids[name] = entity
        mem, emb, clip, order, tid, dates = [], [], [], [], [], []
        for s in conv.sessions:
            dates.append(str(raw.get(f"{s.session_key}_date_time", "")))
            for j, t in enumerate(s.turns):
                mem.append(turn_line(t, f" <speaker_{ids[t.speaker]}>"))
                emb.append(turn_line(t))
                clip.append(s.index)
                order.append(j)
                tid.append(t.turn_id)
        c = Conv(conv.source_id, mem, emb, np.asarray(clip), np.asarray(order), tid, dates)
        where = {t: i for i, t in enumerate(tid)}
        for q in questions:
            if q.category in NO_EVIDENCE_CATEGORIES:
                continue
            ev = {f"D{m.group(1)}:{m.group(2)}" for e in q.evidence for m in _TURN_ID.finditer(e)} & set(where)
            if not ev:
                continue
            rows = sorted(where[t] for t in ev)
            c.questions.append({"question": q.question, "category": q.category, "evidence": rows,
                                "clips": sorted({int(c.clip[i]) for i in rows})})
        c.tokens = [lucene_english(t) for t in mem]
        convs.append(c)
    return convs


# -- embeddings (cached) ---------------------------------------------------------------------------------------
def _embedder(model: str) -> Any:
    from m3graph.embedding import text_embedder
    from m3graph.settings import Settings

    return text_embedder(Settings(text_model={"model": model}))


def embed_cached(texts: list[str], tag: str, embedder: Callable[[], Any], cache: Path = RESULTS) -> np.ndarray:
    digest = hashlib.sha1("\x00".join(texts).encode("utf-8")).hexdigest()[:12]
    path = cache / f"retrieval_methods_vectors_{tag}_{digest}.npy"
    if path.exists():
        return np.load(path)
    cache.mkdir(parents=True, exist_ok=True)
    v = np.asarray(embedder().embed(texts), dtype=np.float32)
    np.save(path, v)
    return v


_QUESTION_WORDS = frozenset(("what", "when", "where", "who", "whom", "whose", "which", "why", "how", "did", "does",
                            "do", "is", "was", "were", "are", "has", "have", "had", "would", "could", "can", "will",
                            "should", "might"))


def strip_question_words(q: str) -> str:
    """The question without its interrogative frame ("When did Caroline go ..." -> "Caroline go ...")."""
    words = q.rstrip("?").split()
    kept = [w for w in words if w.lower().strip(",.?!'\"") not in _QUESTION_WORDS]
    return " ".join(kept) or q


def add_vectors(convs: list[Conv], variants: Sequence[str], model: str = "packaged", cache: Path = RESULTS) -> None:
    """Memory and question vectors by `model` (a `text_model.model` value), cached per model under `cache`."""
    lazy: dict[str, Any] = {}
    tag = model.replace("/", "_")

    def get() -> Any:
        if "e" not in lazy:
            lazy["e"] = _embedder(model)
        return lazy["e"]

    for c in convs:
        c.vec["turn"] = embed_cached(c.embed_text, f"{tag}_{c.name}_turn", get, cache)
        if "prev" in variants:
            ctx = [(c.embed_text[i - 1] + " " if i > 0 and c.clip[i - 1] == c.clip[i] else "") + c.embed_text[i]
                   for i in range(len(c.embed_text))]
            c.vec["prev"] = embed_cached(ctx, f"{tag}_{c.name}_prev", get, cache)
        qs = [q["question"] for q in c.questions]
        c.qvec["raw"] = embed_cached(qs, f"{tag}_{c.name}_q_raw", get, cache)
        if "strip" in variants:
            c.qvec["strip"] = embed_cached([strip_question_words(q) for q in qs], f"{tag}_{c.name}_q_strip", get,
                                           cache)


# -- the ranking -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    """One ranking method. The defaults are the product's ranking (search.py as of this harness)."""

    mem_vec: str = "turn"  # memory vectors: "turn" (the product), "prev" (the turn after its previous turn)
    mem_mix: float = 0.0  # >0: memory vector = normalised((1-mix) * turn + mix * prev-context vector)
    q_vec: str = "raw"  # query vector: "raw" question, "strip" (interrogative words dropped)
    floor: float = 0.25
    pool: int = 300
    w: float = 0.5  # vector weight in the score fusion
    fusion: str = "score"  # "score" (normalised scores) | "rrf" (k = 60)
    beta: float = 0.2  # share of the neighbours' scores
    k1: float = 1.2
    b: float = 0.75
    agg: str = "decay"  # clip aggregation: "decay" (1, 1/2, 1/4 of the best three) | "max" | "sum3"
    sess: float = 0.0  # weight of session-document BM25 (a Clip.text full-text index) in the clip score
    sess_k1: float = 1.2
    sess_b: float = 0.75
    sess_date: bool = False  # the session's date ("8 May, 2023") is part of the session document
    sess_vec: float = 0.0  # weight of the clip centroid's cosine (a Clip vector index), min-max scaled
    cover: float = 0.0  # bonus for the 2nd clip: share of query-term idf it covers and the 1st clip does not
    clip_prior: float = 0.0  # memory score += clip_prior * its clip's normalised score (turn ranking)

    def label(self) -> str:
        base = Config()
        diff = [f"{k}={v}" for k, v in self.__dict__.items() if getattr(base, k) != v]
        return ", ".join(diff) or "product (reproduced)"


def session_docs(conv: Conv, date: bool) -> list[list[str]]:
    """Each session as one document (a Clip.text property): its memories' tokens, after the session date as
    words ("8 May, 2023"; the time of day left out) when `date`."""
    out = []
    for k in range(conv.n_clips):
        toks = [t for i in np.flatnonzero(conv.clip == k) for t in conv.tokens[i]]
        out.append((lucene_english(conv.dates[k].split(" on ", 1)[-1]) if date else []) + toks)
    return out


def fuse(cos: np.ndarray, bm: np.ndarray, floor: float, pool: int, w: float, fusion: str,
         weighted_rrf: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(score, found) of every memory: the product's hybrid step offline. The vector ranking (floored, its top
    `pool`) and the BM25 ranking (its top `pool`) fused by normalised scores (vector share `w`, 1 without BM25
    hits) or by RRF (k = 60; `weighted_rrf` weighs the two lists by w and 1 - w instead of equally)."""
    score = np.zeros(len(cos))
    found = np.zeros(len(cos), dtype=bool)
    above = np.flatnonzero(cos >= floor)
    vtop = above[np.argsort(-cos[above], kind="stable")][:pool]
    btop = np.flatnonzero(bm > 0)
    btop = btop[np.argsort(-bm[btop], kind="stable")][:pool]
    w = w if len(btop) else 1.0
    if fusion == "rrf":
        wv, wb = (w, 1 - w) if weighted_rrf else (1.0, 1.0)
        score[vtop] += wv / (60 + np.arange(1, len(vtop) + 1))
        score[btop] += wb / (60 + np.arange(1, len(btop) + 1))
    else:
        if len(vtop):
            best = cos[vtop[0]]
            score[vtop] += w * ((cos[vtop] - floor) / (best - floor) if best > floor else 1.0)
        if len(btop):
            score[btop] += (1 - w) * bm[btop] / (bm[btop[0]] or 1.0)
    found[vtop] = True
    found[btop] = True
    return score, found


def neighbour_context(clip: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Each memory's neighbours' scores within its own clip (the line before plus the line after)."""
    same_prev = np.r_[False, clip[1:] == clip[:-1]]
    same_next = np.r_[clip[:-1] == clip[1:], False]
    ctx = np.zeros(len(base))
    ctx[1:] += np.where(same_prev[1:], base[:-1], 0.0)
    ctx[:-1] += np.where(same_next[:-1], base[1:], 0.0)
    return ctx


def clip_order(clip_scores: np.ndarray) -> list[int]:
    """Clips by score, best first (ties by index), without those no candidate reached."""
    order = sorted(range(len(clip_scores)), key=lambda k: (-clip_scores[k], k))
    return [k for k in order if np.isfinite(clip_scores[k])]


def top_memories(fused: np.ndarray, cand: np.ndarray, clip: np.ndarray, clip_scores: np.ndarray,
                 order: list[int], clip_prior: float, k: int = 10) -> list[int]:
    """The top-k candidate memories, each lifted by `clip_prior` times its clip's score (scaled by the best)."""
    mem_score = fused.copy()
    if clip_prior > 0 and order:
        best = clip_scores[order[0]]
        prior = np.where(np.isfinite(clip_scores), clip_scores, 0.0) / (best or 1.0)
        mem_score = np.where(cand, fused + clip_prior * prior[clip], -np.inf)
    idx = np.flatnonzero(cand)
    return idx[np.argsort(-mem_score[idx], kind="stable")][:k].tolist()


class Ranker:
    """Per-conversation state: BM25 indexes for memories and sessions, memory vectors per variant."""

    def __init__(self, conv: Conv, all_tokens: list[list[str]], all_clips: Sequence[Conv] = ()) -> None:
        self.c = conv
        self.all_tokens = all_tokens
        self.all_clips = list(all_clips) or [conv]  # a Clip full-text index spans every conversation
        self._bm: dict[tuple[float, float], LuceneBM25] = {}
        self._sess: dict[tuple[float, float, bool], LuceneBM25] = {}
        self.clip_tokens = [sum((conv.tokens[i] for i in np.flatnonzero(conv.clip == k)), [])
                            for k in range(conv.n_clips)]
        self._vecs: dict[tuple[str, float], np.ndarray] = {}
        self._cen: dict[tuple[str, float], np.ndarray] = {}
        self._ctset = [set(t) for t in self.clip_tokens]

    def bm(self, k1: float, b: float) -> LuceneBM25:
        key = (k1, b)
        if key not in self._bm:  # the index spans every conversation: statistics over all of them
            self._bm[key] = LuceneBM25(self.c.tokens, k1, b, stats=self.all_tokens)
        return self._bm[key]

    def sess_bm(self, k1: float, b: float, date: bool = False) -> LuceneBM25:
        key = (k1, b, date)
        if key not in self._sess:
            docs = session_docs(self.c, date)
            stats = [d for c in self.all_clips for d in session_docs(c, date)]
            self._sess[key] = LuceneBM25(docs, k1, b, stats=stats)
        return self._sess[key]

    def vectors(self, cfg: Config) -> np.ndarray:
        key = (cfg.mem_vec, cfg.mem_mix)
        if key not in self._vecs:
            v = self.c.vec[cfg.mem_vec].astype(np.float64)
            if cfg.mem_mix > 0:
                v = (1 - cfg.mem_mix) * self.c.vec["turn"] + cfg.mem_mix * self.c.vec["prev"]
            self._vecs[key] = v / np.linalg.norm(v, axis=1, keepdims=True)
        return self._vecs[key]

    def rank(self, cfg: Config, qi: int) -> tuple[list[int], list[int]]:
        """(top-2 clips, top-10 memories) for question qi."""
        c = self.c
        q = c.questions[qi]
        qv = c.qvec[cfg.q_vec][qi].astype(np.float64)
        qv = qv / np.linalg.norm(qv)
        cos = self.vectors(cfg) @ qv
        terms = query_terms(q["question"])
        bm = self.bm(cfg.k1, cfg.b).scores(terms)
        score, found = fuse(cos, bm, cfg.floor, cfg.pool, cfg.w, cfg.fusion)
        base = np.where(found, score, 0.0)
        fused = np.where(found, base + cfg.beta * neighbour_context(c.clip, base), -np.inf)
        clip_scores = self.clip_scores(cfg, fused, found, terms, qv)
        order = clip_order(clip_scores)
        top_clips = order[:2]
        if cfg.cover > 0 and len(order) > 1:
            top_clips = [order[0], self.second_clip(cfg, order, clip_scores, terms)]
        top_mem = top_memories(fused, found, c.clip, clip_scores, order, cfg.clip_prior)
        return top_clips, top_mem

    def clip_scores(self, cfg: Config, fused: np.ndarray, found: np.ndarray, terms: list[str],
                    query_vec: np.ndarray) -> np.ndarray:
        c = self.c
        out = np.full(c.n_clips, -np.inf)
        for k in range(c.n_clips):
            s = fused[(c.clip == k) & found]
            if not len(s):
                continue
            s = np.sort(s)[::-1][:3]
            if cfg.agg == "max":
                out[k] = s[0]
            elif cfg.agg == "sum3":
                out[k] = float(s.sum())
            else:
                out[k] = float(sum(x * 0.5 ** i for i, x in enumerate(s)))
        if cfg.sess > 0 or cfg.sess_vec > 0:
            fin = np.isfinite(out)
            mem = np.where(fin, out, 0.0)
            mem = mem / (mem.max() or 1.0)
            sb = self.sess_bm(cfg.sess_k1, cfg.sess_b, cfg.sess_date).scores(terms)
            sess = sb / (sb.max() or 1.0)
            out = (1 - cfg.sess - cfg.sess_vec) * mem + cfg.sess * sess
            if cfg.sess_vec > 0:
                cc = self.centroids(cfg) @ query_vec
                out += cfg.sess_vec * (cc - cc.min()) / ((cc.max() - cc.min()) or 1.0)
            else:
                out[~fin & (sb <= 0)] = -np.inf
        return out

    def centroids(self, cfg: Config) -> np.ndarray:
        key = (cfg.mem_vec, cfg.mem_mix)
        if key not in self._cen:
            v = self.vectors(cfg)
            cen = np.stack([v[self.c.clip == k].mean(axis=0) for k in range(self.c.n_clips)])
            self._cen[key] = cen / np.linalg.norm(cen, axis=1, keepdims=True)
        return self._cen[key]

    def second_clip(self, cfg: Config, order: list[int], clip_scores: np.ndarray, terms: list[str]) -> int:
        idf = self.bm(cfg.k1, cfg.b).idf
        uniq = list(dict.fromkeys(terms))
        total = sum(idf.get(t, 0.0) for t in uniq) or 1.0
        first = self.clip_tokens_set(order[0])
        residual = [t for t in uniq if t not in first]
        best = clip_scores[order[0]] or 1.0
        cands = order[1:10]

        def value(k: int) -> float:
            have = self.clip_tokens_set(k)
            bonus = sum(idf.get(t, 0.0) for t in residual if t in have) / total
            return clip_scores[k] / best + cfg.cover * bonus

        return max(cands, key=lambda k: (value(k), -k))

    def clip_tokens_set(self, k: int) -> set[str]:
        return self._ctset[k]


# -- evaluation ------------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """Per-question results of one config on one conversation."""

    clip: np.ndarray
    turn: np.ndarray
    cat: np.ndarray


def run_config(ranker: Ranker, cfg: Config) -> Outcome:
    c = ranker.c
    clip, turn = [], []
    for qi, q in enumerate(c.questions):
        clips, mems = ranker.rank(cfg, qi)
        clip.append(1.0 if set(q["clips"]) <= set(clips) else 0.0)
        turn.append(len(set(q["evidence"]) & set(mems)) / len(q["evidence"]))
    return Outcome(np.asarray(clip), np.asarray(turn), np.asarray([q["category"] for q in c.questions]))


def session_bm25_baseline(conv: Conv) -> Outcome:
    """The eval's session BM25 baseline (m3graph.devkit.eval.retrieval.BM25 over whole sessions; and over turns)."""
    docs = [" ".join(t for t, k in zip(conv.mem_text, conv.clip, strict=True) if k == c) for c in
            range(conv.n_clips)]
    sess, turns = EvalBM25(docs), EvalBM25(conv.mem_text)
    clip, turn = [], []
    for q in conv.questions:
        top = sess.top(q["question"], 2)
        clip.append(1.0 if set(q["clips"]) <= set(top) else 0.0)
        mems = turns.top(q["question"], 10)
        turn.append(len(set(q["evidence"]) & set(mems)) / len(q["evidence"]))
    return Outcome(np.asarray(clip), np.asarray(turn), np.asarray([q["category"] for q in conv.questions]))


def summarize(outs: Sequence[Outcome]) -> dict[str, Any]:
    clip = np.concatenate([o.clip for o in outs])
    turn = np.concatenate([o.turn for o in outs])
    cat = np.concatenate([o.cat for o in outs])
    res: dict[str, Any] = {"n": int(len(clip)), "clip@2": round(float(clip.mean()), 3),
                           "turn@10": round(float(turn.mean()), 3)}
    for k in sorted(set(cat.tolist())):
        m = cat == k
        res[f"clip@2 {k} {CATEGORIES[k]}"] = round(float(clip[m].mean()), 3)
        res[f"turn@10 {k} {CATEGORIES[k]}"] = round(float(turn[m].mean()), 3)
    return res


def objective(outs: Sequence[Outcome], metric: str) -> float:
    if metric == "clip":
        return float(np.concatenate([o.clip for o in outs]).mean())
    if metric == "turn":
        return float(np.concatenate([o.turn for o in outs]).mean())
    return float(np.concatenate([o.clip for o in outs]).mean() + np.concatenate([o.turn for o in outs]).mean())


class Cache:
    def __init__(self, rankers: list[Ranker]) -> None:
        self.rankers = rankers
        self.memo: dict[tuple[Config, int], Outcome] = {}

    def get(self, cfg: Config, i: int) -> Outcome:
        key = (cfg, i)
        if key not in self.memo:
            self.memo[key] = run_config(self.rankers[i], cfg)
        return self.memo[key]


def loco(cache: Cache, grid: Sequence[Config], metric: str) -> dict[str, Any]:
    """Leave-one-conversation-out: the config chosen on two conversations, scored on the third."""
    n = len(cache.rankers)
    held, chosen = [], []
    for i in range(n):
        train = [j for j in range(n) if j != i]
        best = max(grid, key=lambda g: (objective([cache.get(g, j) for j in train], metric), -grid.index(g)))
        chosen.append(best.label())
        held.append(cache.get(best, i))
    full = max(grid, key=lambda g: (objective([cache.get(g, j) for j in range(n)], metric), -grid.index(g)))
    per_fold = {cache.rankers[i].c.name: {k: v for k, v in summarize([held[i]]).items() if k in ("clip@2", "turn@10")}
                for i in range(n)}
    return {"held_out": summarize(held), "held_out_per_fold": per_fold, "chosen_per_fold": chosen,
            "chosen_on_all": full.label(),
            "chosen_on_all_in_sample": summarize([cache.get(full, j) for j in range(n)]), "grid_size": len(grid)}


def grid(base: Config, **axes: Sequence[Any]) -> list[Config]:
    keys = list(axes)
    return [replace(base, **dict(zip(keys, vals, strict=True))) for vals in itertools.product(*axes.values())]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=RESULTS / "retrieval_methods.json")
    ap.add_argument("--quick", action="store_true", help="only the reproduced baseline")
    ap.add_argument("--text-model", default="packaged",
                    help="text_model.model to embed with (the documented figures and floors here are MiniLM's)")
    add_smoke(ap, "two sessions of each conversation, 8 questions each, the product's default text model")
    args = ap.parse_args(argv)
    t0 = time.time()
    cache = RESULTS
    if args.smoke:
        args.data, cache = conversation_slice(scratch("methods"), sessions=2, questions=8, source=args.data), \
            scratch("methods-vectors")
        # bge (ONNX) embeds these in a fifth of MiniLM's CPU time; the MiniLM path runs in bench.text_models' smoke
        args.text_model = "bge-small-en-v1.5-q"
    convs = load_convs(args.data)
    add_vectors(convs, ("prev", "strip"), args.text_model, cache)
    all_tokens = [t for c in convs for t in c.tokens]
    cache = Cache([Ranker(c, all_tokens, convs) for c in convs])
    n = len(convs)
    report: dict[str, Any] = {"conversations": [c.name for c in convs],
                              "questions": [len(c.questions) for c in convs], "fixed": {}, "cv": {}}

    def fixed(name: str, cfg: Config) -> None:
        report["fixed"][name] = {"config": cfg.label(), **summarize([cache.get(cfg, i) for i in range(n)])}
        print(f"{name:<44} {report['fixed'][name]['clip@2']:.3f} {report['fixed'][name]['turn@10']:.3f}",
              flush=True)

    report["fixed"]["session BM25 (eval baseline)"] = summarize([session_bm25_baseline(c) for c in convs])
    print("session BM25", report["fixed"]["session BM25 (eval baseline)"]["clip@2"],
          report["fixed"]["session BM25 (eval baseline)"]["turn@10"])
    base = Config()
    fixed("product hybrid (reproduced)", base)
    if not args.quick:
        for name, cfg in methods(base):
            fixed(name, cfg)
        for name, (g, metric) in cv_grids(base).items():
            report["cv"][name] = loco(cache, g, metric)
            r = report["cv"][name]
            print(f"CV {name:<41} {r['held_out']['clip@2']:.3f} {r['held_out']['turn@10']:.3f} "
                  f"(chosen on all: {r['chosen_on_all']}; folds: {r['chosen_per_fold']})", flush=True)
    report["seconds"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out} in {report['seconds']} s")


def methods(base: Config) -> list[tuple[str, Config]]:
    """Single, parameter-free (or default-parameter) variants, scored on all three conversations."""
    return [
        ("RRF (k=60) instead of score fusion", replace(base, fusion="rrf")),
        ("clip = max memory", replace(base, agg="max")),
        ("clip = sum of top 3", replace(base, agg="sum3")),
        ("query: interrogative words dropped (vector)", replace(base, q_vec="strip")),
        ("memory vector: previous turn + turn", replace(base, mem_vec="prev")),
        ("memory vector: mean(turn, prev+turn)", replace(base, mem_mix=0.5)),
        ("session BM25 fused 0.3", replace(base, sess=0.3)),
        ("session BM25 fused 0.5", replace(base, sess=0.5)),
        ("session BM25 fused 0.4, b=0.3", replace(base, sess=0.4, sess_b=0.3)),
        ("session BM25 fused 0.4 + clip = max memory", replace(base, sess=0.4, agg="max")),
        ("session BM25 0.3, with session date", replace(base, sess=0.3, sess_date=True)),
        ("clip centroid cosine fused 0.2", replace(base, sess_vec=0.2)),
        ("session BM25 0.4 + centroid 0.2", replace(base, sess=0.4, sess_vec=0.2)),
        ("coverage-aware 2nd clip 0.3", replace(base, cover=0.3)),
        ("clip prior on turns 0.3", replace(base, clip_prior=0.3)),
        ("RECOMMENDED (see report)", RECOMMENDED),
        ("RECOMMENDED with clip prior 0.5", replace(RECOMMENDED, clip_prior=0.5)),
        ("RECOMMENDED without the session date", replace(RECOMMENDED, sess_date=False)),
        ("RECOMMENDED + contextual vectors 0.25", replace(RECOMMENDED, mem_mix=0.25)),
    ]


def cv_grids(base: Config) -> dict[str, tuple[list[Config], str]]:
    return {
        "vector weight w": (grid(base, w=[0.3, 0.4, 0.5, 0.6, 0.7]), "both"),
        "neighbour share beta": (grid(base, beta=[0.0, 0.1, 0.2, 0.3, 0.5]), "both"),
        "memory BM25 k1,b": (grid(base, k1=[0.9, 1.2, 2.0], b=[0.3, 0.75]), "both"),
        "session BM25 weight": (grid(base, sess=[0.0, 0.2, 0.3, 0.4, 0.5, 0.6]), "clip"),
        "session BM25 weight x b": (grid(base, sess=[0.2, 0.3, 0.4, 0.5], sess_b=[0.3, 0.75]), "clip"),
        "session BM25 weight, with date": (grid(base, sess=[0.2, 0.3, 0.4, 0.5], sess_date=[True]), "clip"),
        "clip centroid weight": (grid(base, sess_vec=[0.0, 0.1, 0.2, 0.3]), "clip"),
        "coverage bonus": (grid(base, cover=[0.0, 0.1, 0.2, 0.3, 0.5]), "clip"),
        "clip prior": (grid(base, clip_prior=[0.0, 0.1, 0.2, 0.3, 0.5]), "turn"),
        "memory vector mix": (grid(base, mem_mix=[0.0, 0.25, 0.5, 0.75]), "both"),
        "combined, no re-embedding": (combined_grid(base, (0.0,)), "both"),
        "combined, with contextual vectors": (combined_grid(base), "both"),
        "combined, refined grid": (refined_grid(base), "both"),
        "refined grid, chosen for clip@2 (search_clip)": (refined_grid(base), "clip"),
        "refined grid, chosen for turn@10 (search_node)": (refined_grid(base), "turn"),
    }


def combined_grid(base: Config, mixes: Sequence[float] = (0.0, 0.25)) -> list[Config]:
    """The general methods that helped alone, chosen jointly (objective clip@2 + turn@10): memory-level BM25
    parameters, vector weight, clip aggregation, session BM25 (with or without the session date) fused into the
    clip score, the clip prior on turns, and (optionally) contextual memory vectors.
    Lucene's BM25 parameters stay at k1 = 1.2, b = 0.75: a Neo4j full-text index does not expose them.
    """
    out = []
    for sess, date, agg, prior, beta, w, mix in itertools.product((0.3, 0.5), (False, True), ("decay", "max"),
                                                                  (0.3, 0.5), (0.1, 0.2), (0.4, 0.5), mixes):
        out.append(replace(base, sess=sess, sess_date=date, agg=agg, clip_prior=prior, beta=beta, w=w, mem_mix=mix))
    return out


def refined_grid(base: Config) -> list[Config]:
    """A second pass around the first grid's choice (session date and max aggregation were chosen in every
    fold): heavier session BM25 and clip prior, the vector weight and the neighbour share."""
    out = []
    for sess, prior, w, beta in itertools.product((0.4, 0.5, 0.6, 0.7), (0.5, 1.0, 1.5), (0.4, 0.5), (0.1, 0.2)):
        out.append(replace(base, sess=sess, sess_date=True, agg="max", clip_prior=prior, w=w, beta=beta))
    return out


# The recommendation: w, agg, sess and sess_date as chosen for clip@2 in every fold of the first combined grid;
# clip_prior 1.0 as chosen for turn@10 in two of three folds of the refined grid (it leaves clip ranking unchanged).
RECOMMENDED = Config(w=0.4, agg="max", sess=0.5, sess_date=True, clip_prior=1.0)


if __name__ == "__main__":
    main()
