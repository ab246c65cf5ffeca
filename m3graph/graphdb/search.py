"""The controller's memory tools, compiled to named, vector-indexed Cypher.

`search_clip` ranks clips by their best memory (reference §6.5) and returns the top-k clips *not shown yet*
(the reference returned nothing once its global top-2 had been shown); `search_node` returns the top-k
memories. Every query filters by video and `before_clip`, so an answer can never use the future. A small
filtered candidate set is scanned exactly; a large one goes through the vector index with adaptive
over-fetch. Tags are rendered as `<character_K>` from the MENTIONS structure, token-exactly.
Scores are cosines (Neo4j's (1+cos)/2 is converted back).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from m3graph.graphdb.executor import Executor
from m3graph.graphdb.tags import render_characters
from m3graph.graphdb.types import ClipResult, RenderedMemory, clip_key
from m3graph.settings import Settings


def to_cosine(score: float) -> float:
    return 2.0 * score - 1.0


def to_index_score(cosine: float) -> float:
    return (1.0 + cosine) / 2.0


def _render(row: dict[str, Any], score: float | None = None) -> RenderedMemory:
    chars = {(k, n): c for k, n, c in row["chars"] if c is not None}
    return RenderedMemory(memory_id=row["memory_id"], kind=row["kind"], text=render_characters(row["text"], chars),
                          raw_text=row["text"], clip_index=row.get("clip_index", -1), order_in_clip=row["order"],
                          score=score)


class MemorySearch:
    """Read-only search tools over one database."""

    def __init__(self, executor: Executor, settings: Settings) -> None:
        self.ex = executor
        self.cfg = settings.search

    def _vector(self, query: Sequence[float]) -> list[float]:
        v = np.asarray(query, dtype=np.float64)
        return (v / np.linalg.norm(v)).tolist()

    def entities_of(self, char_ids: Sequence[int]) -> list[int]:
        if not char_ids:
            return []
        row = self.ex.read("search/character_entities", char_ids=list(char_ids))
        return sorted(row[0]["entity_ids"]) if row else []

    def _use_exact(self, videos: Sequence[str] | None, before_clip: int | None) -> bool:
        if not videos:
            return False
        n = self.ex.read("search/count_candidates", videos=list(videos), before_clip=before_clip)[0]["n"]
        return int(n) <= self.cfg.exact_scan_limit

    def rank_clips(self, query: Sequence[float], videos: Sequence[str] | None = None, before_clip: int | None = None,
                   exclude: Sequence[str] = (), k: int | None = None, threshold: float | None = None,
                   characters: Sequence[int] = ()) -> list[tuple[str, int, float]]:
        """(video, clip, cosine) of the best clips, excluding clip keys already shown."""
        k = k or self.cfg.clip_topk
        threshold = self.cfg.clip_threshold if threshold is None else threshold
        entity_ids = self.entities_of(characters) if characters else None
        if characters and not entity_ids:
            return []
        params: dict[str, Any] = {"query": self._vector(query), "videos": list(videos) if videos else None,
                                  "before_clip": before_clip, "entity_ids": entity_ids, "exclude": list(exclude),
                                  "min_score": to_index_score(threshold), "k": k}
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

    def clips(self, refs: Sequence[tuple[str, int]], episodic_only: bool = False,
              scores: dict[tuple[str, int], float] | None = None) -> list[ClipResult]:
        rows = self.ex.read("search/clip_memories", clips=[{"video_id": v, "clip_index": c} for v, c in refs],
                            episodic_only=episodic_only)
        out = []
        for r in rows:
            memories = [_render(m | {"clip_index": r["clip_index"]}) for m in r["memories"]]
            out.append(ClipResult(video_id=r["video_id"], clip_index=r["clip_index"], start_s=r["start_s"],
                                  end_s=r["end_s"], score=(scores or {}).get((r["video_id"], r["clip_index"])),
                                  memories=memories))
        order = {ref: i for i, ref in enumerate(refs)}
        return sorted(out, key=lambda c: order[(c.video_id, c.clip_index)])

    def search_clip(self, query: Sequence[float], videos: Sequence[str] | None = None, before_clip: int | None = None,
                    exclude: Sequence[str] = (), k: int | None = None, threshold: float | None = None,
                    characters: Sequence[int] = (), episodic_only: bool = False) -> list[ClipResult]:
        ranked = self.rank_clips(query, videos, before_clip, exclude, k, threshold, characters)
        scores = {(v, c): s for v, c, s in ranked}
        results = self.clips([(v, c) for v, c, _ in ranked], episodic_only, scores)
        return sorted(results, key=lambda r: (r.video_id, r.clip_index))

    def search_node(self, query: Sequence[float], videos: Sequence[str] | None = None, before_clip: int | None = None,
                    k: int | None = None, characters: Sequence[int] = (), text: str | None = None) -> list[ClipResult]:
        """Top-k memories grouped by clip; with `text`, vector and full-text ranks are fused (RRF)."""
        k = k or self.cfg.node_topk
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
        ranked = list(scores)
        if text:
            ranked = self._fuse(ranked, text, params)
        return self._group(ranked[:k], scores)

    def _fuse(self, vector_ids: list[str], text: str, params: dict[str, Any]) -> list[str]:
        p = {key: params[key] for key in ("videos", "before_clip", "entity_ids", "k")}
        ft = [r["memory_id"] for r in self.ex.read("search/nodes_fulltext", text=lucene_phrase_terms(text),
                                                     n=max(100, p["k"] * 5), **p)]
        fused: dict[str, float] = {}
        for ranking in (vector_ids, ft):
            for rank, mid in enumerate(ranking):
                fused[mid] = fused.get(mid, 0.0) + 1.0 / (60 + rank)
        return sorted(fused, key=lambda m: (-fused[m], m))

    def _group(self, ids: Sequence[str], scores: dict[str, float]) -> list[ClipResult]:
        rows = self.ex.read("search/memories_by_id", ids=list(ids))
        by_clip: dict[tuple[str, int], list[RenderedMemory]] = {}
        meta: dict[tuple[str, int], tuple[float | None, float | None]] = {}
        for r in rows:
            key = (r["video_id"], r["clip_index"])
            by_clip.setdefault(key, []).append(_render(r, scores.get(r["memory_id"])))
            meta[key] = (r["start_s"], r["end_s"])
        return [ClipResult(video_id=v, clip_index=c, start_s=meta[(v, c)][0], end_s=meta[(v, c)][1],
                           score=max((m.score or -1.0) for m in mems),
                           memories=sorted(mems, key=lambda m: m.order_in_clip))
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


_LUCENE_SPECIAL = set('+-&|!(){}[]^"~*?:\\/')


def lucene_escape(text: str) -> str:
    return "".join("\\" + ch if ch in _LUCENE_SPECIAL else ch for ch in text)


def lucene_phrase(text: str) -> str:
    """A user string as one exact Lucene phrase: no operator in it can change the query."""
    return '"' + lucene_escape(text.strip()) + '"'


def lucene_phrase_terms(text: str) -> str:
    """A user string as OR-ed escaped terms (for hybrid ranking), never as Lucene syntax.

    Each term is quoted: escaping alone leaves the bare words AND, OR and NOT as operators ("Lily AND" fails).
    """
    terms = ['"' + lucene_escape(t) + '"' for t in text.split() if t.strip()]
    return " ".join(terms) if terms else '""'


__all__ = ["MemorySearch", "clip_key", "lucene_phrase", "to_cosine", "to_index_score"]
