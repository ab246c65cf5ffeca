"""The controller's memory search, compiled to named, indexed Cypher: `plan` a `SearchSpec`, `run` the plan.

Ranking is hybrid when the query's text is given (the controller, the CLI and the demo always give it): the
vector ranking (cosine, floored at the threshold measured for the text model) and the full-text BM25 ranking
over an English-analysed index (stemmed, without stop words) are fused by their normalised scores, so a rare
name or object that the embedder blurs still ranks, and a paraphrase with no shared word still ranks. The
floor applies to the vector cosine only, never to fused scores. A memory also takes a share of its
neighbouring lines' scores (an answer often only makes sense after its question), and a clip scores its best
memory and its BM25 as one document. Three named things in the query move the ranking: a month (clips that
started then rank higher, so a question about "July 2023" finds July's sessions), a file type ("the first PDF":
the turns that shared one, the first most) and, in node mode, a speaker (what a person said is what a
question about them asks for; it would cost clip recall, so clip mode leaves it out); month and speaker
weights were chosen leave-one-conversation-out (bench/retrieval_fusion.py). Without text, ranking is the
reference's (§6.5, `SearchPreset.REFERENCE`): a clip scores its best memory's cosine. A hybrid node-mode hit that
shares a file brings the file's surrogate, and a photo's face the name fact that says who it is (`_attach`): words
find the sharing turn, not what the file shows or who was introduced sessions before.

Clip mode (the controller's search_clip) returns the top-k clips *not shown yet* (the reference returned nothing
once its global top-2 had been shown); node mode (search_node) returns the top-k memories. Every query filters by
video and `before_clip`, so an answer can never use the future, and optionally by a window on the clips' absolute
start time. Each ranking is ONE statement (`search/ranked`), whose parameters are one `SearchPlan`
(graphdb/search_plan.py): both rankings, the fusion, the clip scores and the memories shown; node mode's attached
evidence is a second, read-only one.
On Neo4j 2026.x its variant `search/ranked_2026` filters by video and clip inside the vector index (SEARCH ...
WHERE); on 5.26 a small filtered candidate set is scanned exactly and a large one goes through the index with
over-fetch. Tags are rendered as `<character_K>` from the MENTIONS structure, token-exactly.
Scores shown are cosines (Neo4j's (1+cos)/2 is converted back). `rank_clips` (the reference's vector-only clip
ranking without the memories) is the benchmark's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from m3graph.dates import TimeNotes
from m3graph.fact_versions import VersionView
from m3graph.graphdb.executor import Executor
from m3graph.graphdb.names import NamedCharacter, people_named
from m3graph.graphdb.search_plan import (
    CURRENT,
    MAX_K,
    Scope,
    SearchPlan,
    SearchPreset,
    SearchSpec,
    build_plan,
    check_request,
    to_index_score,
    unit_vector,
)
from m3graph.graphdb.tags import render_characters
from m3graph.graphdb.types import ClipResult, RenderedMemory, clip_key
from m3graph.settings import Settings

_SIZE_TTL_S = 5.0  # how long a scope's memory count is reused (the exact-or-index choice and the fusion pool)


def to_cosine(score: float) -> float:
    return 2.0 * score - 1.0


def _native(value: Any) -> datetime | None:
    """The driver's DateTime as a Python datetime (pydantic models hold the standard type)."""
    to_native = getattr(value, "to_native", None)
    return to_native() if callable(to_native) else value


def render_memory(row: dict[str, Any], score: float | None = None) -> RenderedMemory:
    chars = {(k, n): c for k, n, c in row["chars"] if c is not None}
    return RenderedMemory(memory_id=row["memory_id"], kind=row["kind"], text=render_characters(row["text"], chars),
                          raw_text=row["text"], clip_index=row.get("clip_index", -1), order_in_clip=row["order"],
                          score=score, source_ids=tuple(row.get("source_ids") or ()),
                          times=TimeNotes.from_properties(row), slot=row.get("slot_key"),
                          value=row.get("slot_value"), current=row.get("current"),
                          superseded=row.get("superseded_note"))


def _clip_result(row: dict[str, Any], by_clip: bool, view: VersionView = CURRENT) -> ClipResult:
    """A row of `search/ranked` as a ClipResult: clip mode shows the clip's best cosine, node mode each
    memory's (and the clip's best of them). A whole clip's facts are shown as the view shows them."""
    memories = [render_memory(m | {"clip_index": row["clip_index"]}, None if by_clip else m["score"])
                for m in row["memories"] if view.visible(m)]
    score = row["cosine"] if by_clip else max((m.score for m in memories if m.score is not None), default=None)
    return ClipResult(source_id=row["source_id"], clip_index=row["clip_index"], start_s=row["start_s"],
                      end_s=row["end_s"], score=score, memories=memories, started_at=_native(row["started_at"]),
                      rank=row.get("score"))


class MemorySearch:
    """Read-only search tools over one database."""

    def __init__(self, executor: Executor, settings: Settings) -> None:
        self.ex = executor
        self.settings = settings
        self.cfg = settings.search
        self._sizes: dict[tuple[tuple[str, ...] | None, int | None], tuple[float, int]] = {}

    def _vector(self, query: Sequence[float]) -> list[float]:
        """The unit query vector; a vector of the wrong size, NaN/infinite or all zeros is refused by name."""
        return unit_vector(query, self.settings.memory.text_dim)

    def floor(self, threshold: float | None = None) -> float:
        """The vector-cosine floor: the caller's, or the one measured for the configured text model."""
        return self.settings.search_floor if threshold is None else threshold

    def entities_of(self, char_ids: Sequence[int]) -> list[int]:
        if not char_ids:
            return []
        row = self.ex.read("search/character_entities", char_ids=list(char_ids))
        return sorted(row[0]["entity_ids"]) if row else []

    def scope_size(self, videos: Sequence[str] | None, before_clip: int | None) -> int:
        """The memories a search of the scope may find, remembered for a few seconds (a controller asks several
        searches over one scope; the count changes the pool's size and the exact-or-index path, never which
        memories may be seen). No source named: every memory, read from the count store."""
        key = (tuple(sorted(videos)) if videos else None, before_clip if videos else None)
        now = time.monotonic()
        cached = self._sizes.get(key)
        if cached is not None and now - cached[0] < _SIZE_TTL_S:
            return cached[1]
        rows = (self.ex.read("search/count_candidates", videos=list(videos), before_clip=before_clip) if videos
                else self.ex.read("search/count_memories"))
        n = int(rows[0]["n"])
        if len(self._sizes) > 1024:
            self._sizes.clear()
        self._sizes[key] = (now, n)
        return n

    def small_scope(self, videos: Sequence[str] | None, before_clip: int | None) -> bool:
        """Exact scan or index (5.26's path): decided by the candidate count."""
        return bool(videos) and self.scope_size(videos, before_clip) <= self.cfg.exact_scan_limit

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
        if entity_ids is not None or self.small_scope(videos, before_clip):
            params["videos"] = params["videos"] or self.all_videos()
            rows = self.ex.read("search/clips_exact", **params)
        else:
            rows = self._index_search("search/clips_index", params, k + len(exclude))
        return [(r["source_id"], r["clip_index"], to_cosine(r["score"])) for r in rows]

    def _index_search(self, name: str, params: dict[str, Any], want: int) -> list[dict[str, Any]]:
        n = max(100, want * self.cfg.overfetch)
        while True:
            rows = self.ex.read(name, n=min(n, self.cfg.max_index_candidates), **params)
            if len(rows) >= params["k"] or n >= self.cfg.max_index_candidates:
                return rows
            n *= 4

    def all_videos(self) -> list[str]:
        """Every source's id: a scope of no sources is all of them."""
        return [r["source_id"] for r in self.ex.read("search/all_videos")]

    # -- one statement per search ------------------------------------------------------------------------
    def plan(self, spec: SearchSpec) -> SearchPlan:
        """The parameters of the one statement that answers `spec` (`search_plan.build_plan`).

        A bad vector is refused before any query; the scope's lookups (a character's entities, the clips of a time
        window) and the exact-or-index choice (cached per scope for a few seconds; on Neo4j 2026.x the vector index
        filters inside the index, so it is never needed there) are the only queries. An empty scope (an unknown
        character, no clip in the window) gives a plan that runs nothing.
        """
        self._vector(spec.vector)
        scope = self.scope(spec.videos, spec.before_clip, spec.characters, spec.since, spec.until)
        return build_plan(spec, scope or Scope(videos=[], before_clip=spec.before_clip), self.settings,
                          self.ex.capabilities, self)

    def run(self, plan: SearchPlan) -> list[ClipResult]:
        """Runs `search/ranked` (or its 2026 variant): rankings, fusion, clip scores and memories in ONE round trip.

        Clip mode: the best k clips not excluded, with all their memories, best first (`rank`, the fused relevance;
        the clip's best cosine is its score; the controller presents its evidence in clip order itself, as the
        reference did). Node mode: the top k memories grouped by clip, each with its cosine; a hit that shares a
        file brings what it rests on when the query had words (`_attach`).
        """
        if plan.empty:
            return []
        rows = self.ex.read(plan.statement, **plan.params())
        view = plan.view
        found = [_clip_result(r, plan.by_clip, view) for r in rows]  # clips best first
        if plan.by_clip or not plan.words or not self.cfg.attach_file_evidence:
            return found
        linked = any(m.get("file_linked") for r in rows for m in r["memories"])
        return self._attach(found, plan.videos, plan.before_clip) if linked else found

    def search(self, spec: SearchSpec) -> list[ClipResult]:
        """Both stages in one call: `run(plan(spec))`."""
        return self.run(self.plan(spec))

    # -- the tools ----------------------------------------------------------------------------------------
    def clips(self, refs: Sequence[tuple[str, int]], episodic_only: bool = False,
              scores: dict[tuple[str, int], float] | None = None) -> list[ClipResult]:
        rows = self.ex.read("search/clip_memories", clips=[{"source_id": v, "clip_index": c} for v, c in refs],
                            episodic_only=episodic_only)
        out = []
        for r in rows:
            memories = [render_memory(m | {"clip_index": r["clip_index"]}) for m in r["memories"]]
            out.append(ClipResult(source_id=r["source_id"], clip_index=r["clip_index"], start_s=r["start_s"],
                                  end_s=r["end_s"], score=(scores or {}).get((r["source_id"], r["clip_index"])),
                                  memories=memories, started_at=_native(r["started_at"])))
        order = {ref: i for i, ref in enumerate(refs)}
        return sorted(out, key=lambda c: order[(c.source_id, c.clip_index)])

    def _attach(self, found: list[ClipResult], videos: list[str] | None, before_clip: int | None
                ) -> list[ClipResult]:
        """Adds what a file-linked hit rests on (`search/attached_evidence`): the surrogate of a file a hit turn
        shares, and the name fact of a person in a hit photo, each marked with the hit that brought it
        (`attached_to`). They join their clip among the results (a clip not among them comes after, unranked);
        hits keep their order and their scores."""
        hits = sorted((m for c in found for m in c.memories), key=lambda m: -(m.score if m.score is not None else -2.0))
        rows = self.ex.read("search/attached_evidence", ids=[m.memory_id for m in hits], videos=videos,
                            before_clip=before_clip, per_file=self.cfg.attached_per_file)
        if not rows:
            return found
        via = {r["memory_id"]: r["via"] for r in rows}
        extra = {(c.source_id, c.clip_index): c.model_copy(update={"memories": [
                     m.model_copy(update={"attached_to": via[m.memory_id]}) for m in c.memories]})
                 for c in self._group(list(via), {})}
        out = []
        for c in found:
            more = extra.pop((c.source_id, c.clip_index), None)
            out.append(c if more is None else c.model_copy(update={"memories": sorted(
                [*c.memories, *more.memories], key=lambda m: (m.order_in_clip, m.memory_id))}))
        return out + list(extra.values())

    def _group(self, ids: Sequence[str], scores: dict[str, float | None]) -> list[ClipResult]:
        rows = self.ex.read("search/memories_by_id", ids=list(ids))
        by_clip: dict[tuple[str, int], list[RenderedMemory]] = {}
        meta: dict[tuple[str, int], dict[str, Any]] = {}
        for r in rows:
            key = (r["source_id"], r["clip_index"])
            by_clip.setdefault(key, []).append(render_memory(r, scores.get(r["memory_id"])))
            meta[key] = r
        return [ClipResult(source_id=v, clip_index=c, start_s=meta[(v, c)]["start_s"], end_s=meta[(v, c)]["end_s"],
                           score=max((m.score for m in mems if m.score is not None), default=None),
                           memories=sorted(mems, key=lambda m: m.order_in_clip),
                           started_at=_native(meta[(v, c)]["started_at"]))
                for (v, c), mems in sorted(by_clip.items())]

    def clip_end(self, source_id: str, clip_index: int) -> float | None:
        """Where a clip ends on its source's timeline (an `as_of` clip point), None when there is no such clip."""
        rows = self.ex.read("graph/get_clip", source_id=source_id, clip_index=clip_index)
        return float(rows[0]["end_s"] or 0.0) if rows else None

    def fetch_clip(self, source_id: str, clip_index: int, before_clip: int | None = None, before: int = 0,
                   after: int = 0) -> list[ClipResult]:
        """A clip by id, optionally with its NEXT-chain neighbours; never past `before_clip`."""
        rows = self.ex.read("search/neighbour_clips", source_id=source_id, clip_index=clip_index, before=before,
                            after=after, before_clip=before_clip)
        return self.clips([(source_id, r["clip_index"]) for r in rows])

    def characters_named(self, name: str, videos: Sequence[str] | None = None,
                         before_clip: int | None = None) -> list[tuple[int, int]]:
        """(character id, number of memories that found it), best first (`people_named`'s order)."""
        return [(c.char_id, c.mentions) for c in self.people_named(name, videos, before_clip)]

    def people_named(self, name: str, videos: Sequence[str] | None = None,
                     before_clip: int | None = None) -> list[NamedCharacter]:
        """Every character a name may mean, best first: current names, then former names (after a rename), then
        characters only mentioned beside the name (`m3graph.graphdb.names.people_named`)."""
        return people_named(self.ex, name, videos, before_clip)

    def character_facts(self, char_id: int, videos: Sequence[str] | None = None, before_clip: int | None = None,
                        k: int = 20) -> list[ClipResult]:
        entity_ids = self.entities_of([char_id])
        if not entity_ids:
            return []
        rows = self.ex.read("search/character_facts", entity_ids=entity_ids, videos=list(videos) if videos else None,
                            before_clip=before_clip, k=k)
        return self._group([r["memory_id"] for r in rows], {})


__all__ = ["CURRENT", "MAX_K", "MemorySearch", "NamedCharacter", "Scope", "SearchPlan", "SearchPreset", "SearchSpec",
           "check_request", "clip_key", "to_cosine", "to_index_score"]
