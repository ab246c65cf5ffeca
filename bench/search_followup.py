"""A second, informed search for multi-hop questions: a benchmark of a search the product does not run.

Where it lives: bench/, with its settings (`FollowUpConfig`, formerly the product's `search.followup`) and its two
queries (m3graph/devkit/cypher/bench/followup_*.cypher), since no product path ever built it; only
bench/multihop_followup.py and the tests do (docs/evaluation.md, "Multi-hop follow-up": measured, not adopted).

Why: a multi-hop question's evidence sits in two or more sessions, and the second session shares few words with
the question (dev set: about 40 of 74 multi-hop questions need a session the first search ranks 9th or lower).
What the first hits say often names it: "What did Melanie paint after the trip?" finds the trip, and the trip's
lines name the lake she painted. So the first search's top memories (`seeds`) give the follow-up its words: the
content words they hold and the question lacks (speaker names and stop words left out), the more seeds a word is
in, the higher they rank and the fewer memories of the scope hold it (one UNWIND count over the full-text
index), the earlier it comes.

Strategies: "terms" searches again with the question plus those words; "feedback" also moves the query vector
towards the seeds' vectors (Rocchio's pseudo-relevance feedback); "spread" asks the question again without the
session terms of the ranking (a memory ranks by its own score, a clip by its best memory), for questions whose
evidence lines each match the question on their own but sit in weaker sessions. The second ranking is fused with
the first: clip mode mixes the two clip scores (each scaled by its best) with `clip_weight`; node mode keeps the
first search's top k - `node_slots` memories and fills the rest with the follow-up's best new ones. Both searches
are the product's own (`MemorySearch`) on the same `SearchSpec` with another vector, text and k, so scope,
`before_clip`, floors and versions apply to each unchanged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from m3graph.graphdb.query_text import STOP_WORDS, lucene_query_terms
from m3graph.graphdb.search import MemorySearch
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.types import ClipResult, RenderedMemory


class FollowUpConfig(BaseModel):
    """How the follow-up search is built (benchmark settings; the product has none of these)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    strategy: Literal["off", "terms", "feedback", "spread"] = Field("off", description=(
        "\"terms\": the question plus the content words of the first hits that it lacks; \"feedback\": the same "
        "words with the query vector moved towards the first hits' vectors; \"spread\": the question again, "
        "ranked without the session terms; \"off\": no second search."))
    seeds: int = Field(5, ge=1, le=50, description="The first search's top memories the follow-up is built from.")
    terms: int = Field(8, ge=1, le=32, description="Content words of the seeds added to the question.")
    feedback_weight: float = Field(0.5, ge=0, le=4, description=(
        "\"feedback\": the query vector plus this times the seeds' mean vector."))
    clip_weight: float = Field(0.3, ge=0, le=1, description="Clip mode: the follow-up ranking's share of a "
                                                              "clip's score.")
    node_slots: int = Field(3, ge=0, le=100, description="Node mode: places kept for the follow-up's new hits.")


_CAP = 1000  # full-text hits counted per word: beyond this a word is common anyway
_MAX_TERMS = 32  # FollowUpConfig.terms' bound
_WORD = re.compile(r"\w+", re.UNICODE)
_SPEAKER = re.compile(r"^\s*([^:<]{1,80})(?:<[^>]*>)?\s*:\s*")  # "Name <speaker_N>: " / "Name: " at a line's start


def _body(text: str) -> tuple[str | None, str]:
    """A line's speaker name (None when it has none) and what was said."""
    m = _SPEAKER.match(text)
    return (m.group(1).strip(), text[m.end():]) if m else (None, text)


def followup_terms(question: str, seeds: Sequence[RenderedMemory], n: int,
                   counts: Mapping[str, int] | None = None) -> list[str]:
    """The content words of the seeds (best first) that the question lacks, best first, at most `n`.

    A word scores 1 / (rank + 1) for each seed it occurs in; a word that is capitalised inside a sentence (a
    name, a place, a title) scores double. Speakers' names, and their beginnings ("Mel" for Melanie), are left
    out: every line of a conversation is theirs. With `counts` (how many memories hold each word), a score is
    multiplied by the word's rarity, log(1 + 1000 / (1 + count)): chit-chat ("wow", "awesome") names no session.
    """
    asked = {w for w in _WORD.findall(question.lower())}
    speakers: set[str] = set()
    bodies = []
    for mem in seeds:
        speaker, body = _body(mem.raw_text or mem.text)
        if speaker:
            speakers.update(w.lower() for w in _WORD.findall(speaker))
        bodies.append(body)
    score: dict[str, float] = {}
    for rank, body in enumerate(bodies):
        words = _WORD.findall(body)
        seen: dict[str, float] = {}
        for i, w in enumerate(words):
            low = w.lower()
            if len(low) < 3 or low.isdigit() or low in STOP_WORDS or low in asked:
                continue
            named = w[0].isupper() and i > 0
            seen[low] = max(seen.get(low, 0.0), 2.0 if named else 1.0)
        for low, weight in seen.items():
            score[low] = score.get(low, 0.0) + weight / (rank + 1)
    if counts is not None:
        score = {w: v * math.log(1.0 + _CAP / (1.0 + counts.get(w, 0))) for w, v in score.items()}
    ranked = sorted((w for w in score if not any(name.startswith(w) for name in speakers)),
                    key=lambda w: (-score[w], w))
    return ranked[:n]


def candidate_words(question: str, seeds: Sequence[RenderedMemory]) -> list[str]:
    """Every word `followup_terms` may choose from these seeds (what `word_counts` is asked about)."""
    return followup_terms(question, seeds, 4 * _MAX_TERMS)


def _memories_by_rank(results: Sequence[ClipResult]) -> list[RenderedMemory]:
    """A node-mode answer's memories, best first: clips come best first; within one, by cosine."""
    out: list[RenderedMemory] = []
    for clip in results:
        out += sorted(clip.memories, key=lambda m: -(m.score if m.score is not None else -2.0))
    return out


def fuse_clips(first: Sequence[ClipResult], second: Sequence[ClipResult], weight: float, k: int) -> list[ClipResult]:
    """The top k clips by (1 - weight) x first score + weight x follow-up score, each scaled by its best
    (a clip missing from one ranking scores 0 there); ties keep the first ranking's order."""
    def scaled(results: Sequence[ClipResult]) -> dict[tuple[str, int], float]:
        vals = {(c.source_id, c.clip_index): float(c.rank or 0.0) for c in results}
        best = max(vals.values(), default=0.0)
        return {key: (v / best if best > 0 else 0.0) for key, v in vals.items()}

    s1, s2 = scaled(first), scaled(second)
    clips = {(c.source_id, c.clip_index): c for c in second} | {(c.source_id, c.clip_index): c for c in first}
    order = {key: i for i, key in enumerate([*s1, *[key for key in s2 if key not in s1]])}
    fused = {key: (1 - weight) * s1.get(key, 0.0) + weight * s2.get(key, 0.0) for key in clips}
    top = sorted(clips, key=lambda key: (-fused[key], order[key]))[:k]
    return [clips[key].model_copy(update={"rank": fused[key]}) for key in top]


def merge_nodes(first: Sequence[ClipResult], second: Sequence[ClipResult], k: int) -> list[ClipResult]:
    """The first answer's memories, then the follow-up's best memories not among them, k in all, grouped by clip
    in the order their clips first appear."""
    chosen = _memories_by_rank(first)[:k]
    have = {m.memory_id for m in chosen}
    for m in _memories_by_rank(second):
        if len(chosen) >= k:
            break
        if m.memory_id not in have:
            chosen.append(m)
            have.add(m.memory_id)
    meta = {(c.source_id, c.clip_index): c for c in (*second, *first)}
    home = {m.memory_id: (c.source_id, c.clip_index) for c in (*second, *first) for m in c.memories}
    groups: dict[tuple[str, int], list[RenderedMemory]] = {}
    for m in chosen:
        groups.setdefault(home[m.memory_id], []).append(m)
    return [meta[key].model_copy(update={
                "memories": sorted(mems, key=lambda m: m.order_in_clip),
                "score": max((m.score for m in mems if m.score is not None), default=None)})
            for key, mems in groups.items()]


class FollowUpSearch:
    """`MemorySearch.search` with a follow-up search; with the strategy "off" (or no question text) it is exactly
    `MemorySearch`'s."""

    def __init__(self, search: MemorySearch, cfg: FollowUpConfig | None = None) -> None:
        self.first = search
        self.cfg = cfg or FollowUpConfig()
        # "spread": the second search is the question again, ranked without the session terms (no clip prior, no
        # clip document), so lines from sessions other than the best one can take the reserved places.
        self.second = search
        if self.cfg.strategy == "spread":
            flat = search.cfg.model_copy(update={"clip_prior": 0.0, "clip_text_weight": 0.0})
            self.second = MemorySearch(search.ex, search.settings.model_copy(update={"search": flat}))

    def word_counts(self, words: Sequence[str], videos: Sequence[str] | None) -> dict[str, int]:
        """How many memories of these videos hold each word (up to 1000), in one UNWIND query."""
        batch = [{"word": w, "query": q} for w in words if (q := lucene_query_terms(w, "text"))]
        if not batch:
            return {}
        rows = self.first.ex.read("bench/followup_word_counts", words=batch,
                                  videos=list(videos) if videos else None, cap=_CAP)
        return {r["word"]: int(r["n"]) for r in rows}

    def followup(self, query: Sequence[float], text: str, seeds: Sequence[RenderedMemory],
                 videos: Sequence[str] | None = None) -> tuple[list[float], str] | None:
        """The follow-up's query vector and text, or None when the seeds add no word ("spread": the question's)."""
        if self.cfg.strategy == "spread":
            return list(query), text
        words = followup_terms(text, seeds, self.cfg.terms, self.word_counts(candidate_words(text, seeds), videos))
        if not words:
            return None
        vector = list(query)
        if self.cfg.strategy == "feedback" and self.cfg.feedback_weight > 0:
            rows = self.first.ex.read("bench/followup_vectors", ids=[m.memory_id for m in seeds])
            if rows:
                q = np.asarray(self.first._vector(query))
                centroid = np.mean([np.asarray(r["embedding"], dtype=np.float64) for r in rows], axis=0)
                centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
                moved = q + self.cfg.feedback_weight * centroid
                vector = (moved / max(float(np.linalg.norm(moved)), 1e-12)).tolist()
        return vector, f"{text} {' '.join(words)}"

    def search(self, spec: SearchSpec) -> list[ClipResult]:
        """`spec` searched, then searched again with the follow-up's vector and text, the two fused by mode."""
        return self._clips(spec) if spec.mode == "clip" else self._nodes(spec)

    def _clips(self, spec: SearchSpec) -> list[ClipResult]:
        text = spec.text
        if self.cfg.strategy == "off" or not text or self.cfg.clip_weight == 0:
            return self.first.search(spec)
        k = spec.k or self.first.cfg.clip_topk
        pool = max(k, 10)
        first = self.first.search(replace(spec, k=pool))
        seeds_of = replace(spec, mode="node", k=self.cfg.seeds, exclude=(), episodic_only=False)
        seeds = _memories_by_rank(self.first.search(seeds_of))[:self.cfg.seeds]
        plan = self.followup(spec.vector, text, seeds, spec.videos)
        if plan is None:
            return first[:k]
        second = self.second.search(replace(spec, vector=plan[0], k=pool, text=plan[1]))
        return fuse_clips(first, second, self.cfg.clip_weight, k)

    def _nodes(self, spec: SearchSpec) -> list[ClipResult]:
        text = spec.text
        k = spec.k or self.first.cfg.node_topk
        slots = min(self.cfg.node_slots, k - 1)
        if self.cfg.strategy == "off" or not text or slots <= 0:
            return self.first.search(replace(spec, k=k))
        first = self.first.search(replace(spec, k=k - slots))
        seeds = _memories_by_rank(first)[:self.cfg.seeds]
        plan = self.followup(spec.vector, text, seeds, spec.videos)
        if plan is None:
            return self.first.search(replace(spec, k=k))
        second = self.second.search(replace(spec, vector=plan[0], k=k, text=plan[1]))
        return merge_nodes(first, second, k)


__all__ = ["FollowUpConfig", "FollowUpSearch", "candidate_words", "followup_terms", "fuse_clips", "merge_nodes"]
