"""The controller's memory tools, compiled to named, indexed Cypher.

Ranking is hybrid when the query's text is given (the controller, the CLI and the demo always give it): the
vector ranking (cosine, floored at the threshold measured for the text model) and the full-text BM25 ranking
over an English-analysed index (stemmed, without stop words) are fused by their normalised scores, so a rare
name or object that the embedder blurs still ranks, and a paraphrase with no shared word still ranks. The
floor applies to the vector cosine only, never to fused scores. A memory also takes a share of its
neighbouring lines' scores (an answer often only makes sense after its question), and a clip scores its best
memories with decaying weights. Without text, ranking is the reference's (§6.5): a clip scores its best
memory's cosine.

`search_clip` returns the top-k clips *not shown yet* (the reference returned nothing once its global top-2
had been shown); `search_node` returns the top-k memories. Every query filters by video and `before_clip`, so
an answer can never use the future, and optionally by a window on the clips' absolute start time. A small
filtered candidate set is scanned exactly; a large one goes through the vector index with adaptive
over-fetch. Tags are rendered as `<character_K>` from the MENTIONS structure, token-exactly.
Scores shown are cosines (Neo4j's (1+cos)/2 is converted back).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from m3graph.errors import InvalidInputError
from m3graph.graphdb.executor import Executor
from m3graph.graphdb.tags import render_characters
from m3graph.graphdb.types import ClipResult, RenderedMemory, clip_key
from m3graph.settings import Settings

# One worker thread: the full-text query of a hybrid search runs while the calling thread runs the vector
# query (the driver is thread-safe; each query takes its own session).
_PATH_TTL_S = 5.0  # how long an exact-or-index decision is reused
_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="m3graph-search")


def to_cosine(score: float) -> float:
    return 2.0 * score - 1.0


def to_index_score(cosine: float) -> float:
    return (1.0 + cosine) / 2.0


def _native(value: Any) -> datetime | None:
    """The driver's DateTime as a Python datetime (pydantic models hold the standard type)."""
    to_native = getattr(value, "to_native", None)
    return to_native() if callable(to_native) else value


def _render(row: dict[str, Any], score: float | None = None) -> RenderedMemory:
    chars = {(k, n): c for k, n, c in row["chars"] if c is not None}
    return RenderedMemory(memory_id=row["memory_id"], kind=row["kind"], text=render_characters(row["text"], chars),
                          raw_text=row["text"], clip_index=row.get("clip_index", -1), order_in_clip=row["order"],
                          score=score, source_ids=tuple(row.get("source_ids") or ()))


@dataclass(frozen=True)
class Candidate:
    """One memory of the fused ranking."""

    memory_id: str
    video_id: str
    clip_index: int
    fused: float  # normalised vector and full-text scores, mixed, with a share of the neighbours' scores
    cosine: float | None  # None: found by full text only (below the floor or outside the vector pool)


@dataclass(frozen=True)
class Scope:
    """What one search may see: videos, `before_clip`, a character's entities, a time window (as clip keys)."""

    videos: list[str] | None = None
    before_clip: int | None = None
    entity_ids: list[int] | None = None
    clips: list[str] | None = None

    def params(self) -> dict[str, Any]:
        return {"videos": self.videos, "before_clip": self.before_clip, "entity_ids": self.entity_ids,
                "clips": self.clips}


class MemorySearch:
    """Read-only search tools over one database."""

    def __init__(self, executor: Executor, settings: Settings) -> None:
        self.ex = executor
        self.settings = settings
        self.cfg = settings.search
        self._exact: dict[tuple[tuple[str, ...], int | None], tuple[float, bool]] = {}

    def _vector(self, query: Sequence[float]) -> list[float]:
        """The unit query vector; a vector of the wrong size, NaN/infinite or all zeros is refused by name."""
        try:
            v = np.asarray(query, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidInputError("query vector: not a list of numbers") from None
        dim = self.settings.memory.text_dim
        if v.size != dim:
            raise InvalidInputError(f"query vector has {v.size} dimensions; the text model's memories have {dim}")
        if not np.all(np.isfinite(v)):
            raise InvalidInputError("query vector contains NaN or infinity")
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            raise InvalidInputError("query vector is all zeros (no direction to search in)")
        return (v / norm).tolist()

    def floor(self, threshold: float | None = None) -> float:
        """The vector-cosine floor: the caller's, or the one measured for the configured text model."""
        return self.settings.search_floor if threshold is None else threshold

    def entities_of(self, char_ids: Sequence[int]) -> list[int]:
        if not char_ids:
            return []
        row = self.ex.read("search/character_entities", char_ids=list(char_ids))
        return sorted(row[0]["entity_ids"]) if row else []

    def _use_exact(self, videos: Sequence[str] | None, before_clip: int | None) -> bool:
        """Exact scan or index: decided by the candidate count, remembered for a few seconds (a controller asks
        several searches over one scope; the choice changes speed, never which memories may be seen)."""
        if not videos:
            return False
        key = (tuple(sorted(videos)), before_clip)
        now = time.monotonic()
        cached = self._exact.get(key)
        if cached is not None and now - cached[0] < _PATH_TTL_S:
            return cached[1]
        n = self.ex.read("search/count_candidates", videos=list(videos), before_clip=before_clip)[0]["n"]
        exact = int(n) <= self.cfg.exact_scan_limit
        if len(self._exact) > 1024:
            self._exact.clear()
        self._exact[key] = (now, exact)
        return exact

    def scope(self, videos: Sequence[str] | None = None, before_clip: int | None = None,
              characters: Sequence[int] = (), since: datetime | None = None,
              until: datetime | None = None) -> Scope | None:
        """The search scope, or None when it is empty (an unknown character, no clip in the time window)."""
        entity_ids = self.entities_of(characters) if characters else None
        if characters and not entity_ids:
            return None
        clips = None
        if since is not None or until is not None:
            clips = [r["clip_key"] for r in self.ex.read("search/clips_in_window", videos=list(videos) if videos
                                                           else None, since=since, until=until)]
            if not clips:
                return None
        return Scope(list(videos) if videos else None, before_clip, entity_ids, clips)

    # -- the reference's vector-only clip ranking ---------------------------------------------------------
    def rank_clips(self, query: Sequence[float], videos: Sequence[str] | None = None, before_clip: int | None = None,
                   exclude: Sequence[str] = (), k: int | None = None, threshold: float | None = None,
                   characters: Sequence[int] = ()) -> list[tuple[str, int, float]]:
        """(video, clip, cosine) of the best clips by their best memory, excluding clip keys already shown."""
        check_request(k, before_clip)
        k = k or self.cfg.clip_topk
        entity_ids = self.entities_of(characters) if characters else None
        if characters and not entity_ids:
            return []
        params: dict[str, Any] = {"query": self._vector(query), "videos": list(videos) if videos else None,
                                  "before_clip": before_clip, "entity_ids": entity_ids, "exclude": list(exclude),
                                  "min_score": to_index_score(self.floor(threshold)), "k": k}
        if entity_ids is not None or self._use_exact(videos, before_clip):
            params["videos"] = params["videos"] or self._all_videos()
            rows = self.ex.read("search/clips_exact", **params)
        else:
            rows = self._index_search("search/clips_index", params, k + len(exclude))
        return [(r["video_id"], r["clip_index"], to_cosine(r["score"])) for r in rows]

    def _index_search(self, name: str, params: dict[str, Any], want: int) -> list[dict[str, Any]]:
        n = max(100, want * self.cfg.overfetch)
        while True:
            rows = self.ex.read(name, n=min(n, self.cfg.max_index_candidates), **params)
            if len(rows) >= params["k"] or n >= self.cfg.max_index_candidates:
                return rows
            n *= 4

    def _all_videos(self) -> list[str]:
        return [r["video_id"] for r in self.ex.read("search/all_videos")]

    # -- hybrid ranking -----------------------------------------------------------------------------------
    def _collect(self, name: str, params: dict[str, Any], want: int, filtered: bool) -> list[dict[str, Any]]:
        """Index hits until `want` pass the filters, the index has no more, or more cannot pass the floor."""
        n = want * self.cfg.overfetch if filtered else want
        limit = max(self.cfg.max_index_candidates, want)
        while True:
            asked = min(n, limit)
            row = self.ex.read(name, n=asked, **params)[0]
            lowest = row.get("lowest")
            floored = lowest is not None and lowest < params.get("min_score", -2.0)
            if len(row["rows"]) >= want or row["raw"] < asked or asked >= limit or floored:
                return list(row["rows"])
            n *= 4

    def vector_ranking(self, query: Sequence[float], scope: Scope, floor: float, n: int) -> list[dict[str, Any]]:
        """Memories by cosine (index score), at or above the floor, best first."""
        params = {"query": self._vector(query), **scope.params(), "min_score": to_index_score(floor), "k": n}
        if scope.entity_ids is not None or self._use_exact(scope.videos, scope.before_clip):
            params["videos"] = params["videos"] or self._all_videos()
            return list(self.ex.read("search/vector_candidates_exact", **params)[0]["rows"])
        filtered = any(v is not None for v in scope.params().values())
        return self._collect("search/vector_candidates_index", params, n, filtered)

    def text_ranking(self, text: str, scope: Scope, n: int) -> list[dict[str, Any]]:
        """Memories by BM25 over the English-analysed full-text index; the text is never Lucene syntax."""
        terms = lucene_query_terms(text)
        if terms is None:
            return []
        params = {"text": terms, **scope.params(), "k": n}
        filtered = any(v is not None for v in scope.params().values())
        return self._collect("search/text_candidates", params, n, filtered)

    def fused(self, query: Sequence[float], text: str | None, scope: Scope, floor: float, pool: int
              ) -> list[Candidate]:
        """The floored vector ranking and the full-text ranking fused by normalised scores, best first.

        Each score is scaled by the best of its ranking (the cosine above the floor: (cos - floor) / (best -
        floor); BM25: bm25 / best), and the two are mixed with `vector_weight`. Scores, unlike reciprocal
        ranks, keep how far apart hits are: one line that matches both ways clearly beats a list of near-misses.
        Then every memory takes `context_weight` of its neighbours' scores (the lines before and after it in
        its clip), because the line that answers often only makes sense after the line before it.
        """
        if text and self.cfg.hybrid:  # the two rankings are independent queries: run them side by side
            pending = _POOL.submit(self.text_ranking, text, scope, pool)
            vector = self.vector_ranking(query, scope, floor, pool)
            textual = pending.result()
        else:
            vector, textual = self.vector_ranking(query, scope, floor, pool), []
        w = self.cfg.vector_weight if textual else 1.0
        found: dict[str, dict[str, Any]] = {}

        def entry(r: dict[str, Any]) -> dict[str, Any]:
            return found.setdefault(r["memory_id"], {"video_id": r["video_id"], "clip_index": r["clip_index"],
                                                     "order": r["order"], "score": 0.0, "cosine": None})

        if vector:
            best = max(to_cosine(r["score"]) for r in vector)
            for r in vector:
                cos = to_cosine(r["score"])
                e = entry(r)
                e["cosine"] = cos
                e["score"] += w * ((cos - floor) / (best - floor) if best > floor else 1.0)
        if textual:
            best = max(r["score"] for r in textual) or 1.0
            for r in textual:
                entry(r)["score"] += (1.0 - w) * r["score"] / best
        beta = self.cfg.context_weight
        at = {(e["video_id"], e["clip_index"], e["order"]): e["score"] for e in found.values()}
        out = []
        for memory_id, e in found.items():
            here = (e["video_id"], e["clip_index"])
            context = sum(at.get((*here, e["order"] + d), 0.0) for d in (-1, 1)) if e["order"] is not None else 0.0
            out.append(Candidate(memory_id, e["video_id"], e["clip_index"], e["score"] + beta * context,
                                 e["cosine"]))
        return sorted(out, key=lambda c: (-c.fused, c.memory_id))

    def clip_scores(self, candidates: Sequence[Candidate]) -> dict[tuple[str, int], float]:
        """A clip's score: its best memory's fused score, plus half the next one's, a quarter of the third's...

        (`clip_evidence` memories): the best line decides, and more matching lines break ties between clips.
        """
        best: dict[tuple[str, int], list[float]] = {}
        for c in sorted(candidates, key=lambda c: -c.fused):
            scores = best.setdefault((c.video_id, c.clip_index), [])
            if len(scores) < self.cfg.clip_evidence:
                scores.append(c.fused)
        return {key: float(sum(x * 0.5 ** i for i, x in enumerate(v))) for key, v in best.items()}

    def _pool(self, want: int) -> int:
        return max(self.cfg.fusion_pool, 5 * want)

    # -- the tools ----------------------------------------------------------------------------------------
    def clips(self, refs: Sequence[tuple[str, int]], episodic_only: bool = False,
              scores: dict[tuple[str, int], float] | None = None) -> list[ClipResult]:
        rows = self.ex.read("search/clip_memories", clips=[{"video_id": v, "clip_index": c} for v, c in refs],
                            episodic_only=episodic_only)
        out = []
        for r in rows:
            memories = [_render(m | {"clip_index": r["clip_index"]}) for m in r["memories"]]
            out.append(ClipResult(video_id=r["video_id"], clip_index=r["clip_index"], start_s=r["start_s"],
                                  end_s=r["end_s"], score=(scores or {}).get((r["video_id"], r["clip_index"])),
                                  memories=memories, started_at=_native(r["started_at"])))
        order = {ref: i for i, ref in enumerate(refs)}
        return sorted(out, key=lambda c: order[(c.video_id, c.clip_index)])

    def search_clip(self, query: Sequence[float], videos: Sequence[str] | None = None, before_clip: int | None = None,
                    exclude: Sequence[str] = (), k: int | None = None, threshold: float | None = None,
                    characters: Sequence[int] = (), episodic_only: bool = False, text: str | None = None,
                    since: datetime | None = None, until: datetime | None = None) -> list[ClipResult]:
        """The best k clips not in `exclude`, with all their memories, in clip order.

        With `text` (or a time window) clips are ranked by fused evidence; without, by their best memory's cosine.
        `threshold` floors the vector cosine (default: the floor measured for the text model).
        """
        check_request(k, before_clip)
        self._vector(query)  # refuses a bad vector before any query, whichever ranking runs
        k = k or self.cfg.clip_topk
        if not (text and self.cfg.hybrid) and since is None and until is None:
            ranked = self.rank_clips(query, videos, before_clip, exclude, k, threshold, characters)
            refs = [(v, c) for v, c, _ in ranked]
            cosines = {(v, c): s for v, c, s in ranked}
        else:
            scope = self.scope(videos, before_clip, characters, since, until)
            if scope is None:
                return []
            candidates = self.fused(query, text, scope, self.floor(threshold), self._pool(k + len(exclude)))
            scores = self.clip_scores(candidates)
            shown = set(exclude)
            refs = [key for key in sorted(scores, key=lambda key: (-scores[key], key))
                    if clip_key(*key) not in shown][:k]
            cosines = {}
            for c in candidates:
                key = (c.video_id, c.clip_index)
                if c.cosine is not None and c.cosine > cosines.get(key, -2.0):
                    cosines[key] = c.cosine
        results = self.clips(refs, episodic_only, cosines)
        return sorted(results, key=lambda r: (r.video_id, r.clip_index))

    def search_node(self, query: Sequence[float], videos: Sequence[str] | None = None, before_clip: int | None = None,
                    k: int | None = None, characters: Sequence[int] = (), text: str | None = None,
                    since: datetime | None = None, until: datetime | None = None,
                    threshold: float | None = None) -> list[ClipResult]:
        """Top-k memories grouped by clip: fused (vector floored + full text) with `text`, else by cosine alone."""
        check_request(k, before_clip)
        self._vector(query)
        k = k or self.cfg.node_topk
        if text and self.cfg.hybrid or since is not None or until is not None:
            scope = self.scope(videos, before_clip, characters, since, until)
            if scope is None:
                return []
            top = self.fused(query, text, scope, self.floor(threshold), self._pool(k))[:k]
            return self._group([c.memory_id for c in top], {c.memory_id: c.cosine for c in top})
        entity_ids = self.entities_of(characters) if characters else None
        if characters and not entity_ids:
            return []
        params: dict[str, Any] = {"query": self._vector(query), "videos": list(videos) if videos else None,
                                  "before_clip": before_clip, "entity_ids": entity_ids, "k": k}
        if entity_ids is not None or self._use_exact(videos, before_clip):
            params["videos"] = params["videos"] or self._all_videos()
            rows = self.ex.read("search/nodes_exact", **params)
        else:
            rows = self._index_search("search/nodes_index", params, k)
        scores = {r["memory_id"]: to_cosine(r["score"]) for r in rows}
        return self._group(list(scores)[:k], scores)

    def _group(self, ids: Sequence[str], scores: dict[str, float | None]) -> list[ClipResult]:
        rows = self.ex.read("search/memories_by_id", ids=list(ids))
        by_clip: dict[tuple[str, int], list[RenderedMemory]] = {}
        meta: dict[tuple[str, int], dict[str, Any]] = {}
        for r in rows:
            key = (r["video_id"], r["clip_index"])
            by_clip.setdefault(key, []).append(_render(r, scores.get(r["memory_id"])))
            meta[key] = r
        return [ClipResult(video_id=v, clip_index=c, start_s=meta[(v, c)]["start_s"], end_s=meta[(v, c)]["end_s"],
                           score=max((m.score for m in mems if m.score is not None), default=None),
                           memories=sorted(mems, key=lambda m: m.order_in_clip),
                           started_at=_native(meta[(v, c)]["started_at"]))
                for (v, c), mems in sorted(by_clip.items())]

    def fetch_clip(self, video_id: str, clip_index: int, before_clip: int | None = None, before: int = 0,
                   after: int = 0) -> list[ClipResult]:
        """A clip by id, optionally with its NEXT-chain neighbours; never past `before_clip`."""
        rows = self.ex.read("search/neighbour_clips", video_id=video_id, clip_index=clip_index, before=before,
                            after=after, before_clip=before_clip)
        return self.clips([(video_id, r["clip_index"]) for r in rows])

    def characters_named(self, name: str, videos: Sequence[str] | None = None,
                         before_clip: int | None = None) -> list[tuple[int, int]]:
        """(character id, number of semantic memories naming it), best first."""
        rows = self.ex.read("search/characters_named", text=lucene_phrase(name),
                            videos=list(videos) if videos else None, before_clip=before_clip)
        return [(r["char_id"], r["mentions"]) for r in rows]

    def character_facts(self, char_id: int, videos: Sequence[str] | None = None, before_clip: int | None = None,
                        k: int = 20) -> list[ClipResult]:
        entity_ids = self.entities_of([char_id])
        if not entity_ids:
            return []
        rows = self.ex.read("search/character_facts", entity_ids=entity_ids, videos=list(videos) if videos else None,
                            before_clip=before_clip, k=k)
        return self._group([r["memory_id"] for r in rows], {})


MAX_K = 1000  # more results than any caller can read; a larger k is a mistake, not a request


def check_request(k: int | None, before_clip: int | None) -> None:
    """Refuses, naming the value, a k or before_clip no search can honour (checked before any query runs)."""
    if k is not None and not (isinstance(k, int | np.integer) and 1 <= k <= MAX_K):
        raise InvalidInputError(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
    if before_clip is not None and not (isinstance(before_clip, int | np.integer) and before_clip >= 0):
        raise InvalidInputError(f"before_clip must be a clip index >= 0, got {before_clip!r}")


_LUCENE_SPECIAL = set('+-&|!(){}[]^"~*?:\\/')


def lucene_escape(text: str) -> str:
    return "".join("\\" + ch if ch in _LUCENE_SPECIAL else ch for ch in text)


def lucene_phrase(text: str) -> str:
    """A user string as one exact Lucene phrase: no operator in it can change the query."""
    return '"' + lucene_escape(text.strip()) + '"'


# Function words dropped from hybrid search's full-text query (the English analyser drops only 33 of them):
# a question's "what did ... do" would otherwise match every line of a conversation.
_STOP_WORDS = """
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just let me more most my myself no nor not now of off
on once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when where
which while who whom whose why will with would you your yours yourself yourselves
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"\w+", re.UNICODE)


def lucene_query_terms(text: str) -> str | None:
    """A user string as OR-ed, escaped, quoted content words for BM25 ranking; None when none is left.

    Only word characters survive tokenization and every term is quoted and escaped, so nothing a user (or a
    model) writes can become a Lucene operator, field or wildcard.
    """
    words = [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())]
    unique = list(dict.fromkeys(words))[:64]
    return "text:(" + " ".join('"' + lucene_escape(w) + '"' for w in unique) + ")" if unique else None


def lucene_phrase_terms(text: str) -> str:
    """A user string as OR-ed escaped terms (for hybrid ranking), never as Lucene syntax.

    Each term is quoted: escaping alone leaves the bare words AND, OR and NOT as operators ("Lily AND" fails).
    """
    terms = ['"' + lucene_escape(t) + '"' for t in text.split() if t.strip()]
    return " ".join(terms) if terms else '""'


__all__ = ["Candidate", "MemorySearch", "Scope", "clip_key", "lucene_phrase", "lucene_query_terms", "to_cosine",
           "to_index_score"]
