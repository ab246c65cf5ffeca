"""The controller's tools over the graph: search_clip, search_node and fetch_clip for one question's scope.

Results come back as the research code showed them (reference §7.6): memory strings grouped by clip,
`<character_K>` tags, no `Equivalence:` lines, no scores or ids; for the reader (tools mode, a `names.NameBook`
given) each tag a line does not name yet has the person's name before it, ``Mia (<character_4>)``, and a question
naming a time (`as_of.py`) reads facts as of then. The scope (videos, `before_clip`) is fixed
per question, so no tool can leak memory from after the moment the question was asked. Searches are the
application service's (`m3graph.service.search.run_search`), the one search every front end runs, so what the
controller is shown is what `m3graph search`, the MCP tools and the explorer find for the same query.

Choosing node- versus clip-level search in the M3 text contract: the research code ran node search only
when the query contained the exact substring "character id" (§7.5), so "Character ID of Lily" or "who is
<character_3>" silently went to clip search. Here the choice is structural: a query that names a
`<character_K>` tag, or asks for an identity mapping (a name ↔ character question, recognised by a small
grammar of phrasings, case-insensitive), goes to node search scoped to that character when one is named;
and a clip search that finds no new clip falls back to node search instead of returning nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from m3graph.embedding import TextEmbedder, query_embed
from m3graph.errors import InvalidInputError
from m3graph.graphdb import passages
from m3graph.graphdb.search import MemorySearch
from m3graph.graphdb.tags import is_equivalence
from m3graph.graphdb.types import ClipResult, RenderedMemory, clip_key
from m3graph.reasoning import file_tools
from m3graph.reasoning.names import NameBook
from m3graph.service.requests import SearchRequest
from m3graph.service.search import characters_in, run_search
from m3graph.settings import Settings

ToolName = Literal["search_clip", "search_node", "fetch_clip", "list_files", "look_at_file"]
_CLIP_REF = re.compile(r"^\s*(?:(?P<video>[A-Za-z0-9][A-Za-z0-9._:\-]*)/)?CLIP_(?P<clip>\d+)\s*$", re.IGNORECASE)
_IDENTITY = re.compile(
    r"\bcharacter[\s_-]*(?:id|ids|number|tag|label)\b"  # "character id of Lily", "Character-ID"
    r"|\b(?:what|who)(?:'s|\s+is|\s+are)\s+(?:the\s+)?names?\b"  # "what is the name of ..."
    r"|\bnames?\s+of\b"  # "name of <character_2>"
    r"|\bwho\s+is\s+called\b|\bis\s+(?:called|named)\b",
    re.IGNORECASE)


def wants_node_search(query: str) -> bool:
    """Identity questions and questions about a known character need individual facts, not whole clips."""
    return bool(characters_in(query)) or bool(_IDENTITY.search(query))


# A question about an earlier state ("what was her favourite fruit before?", "what did he use to drive?") needs
# the versions a newer fact superseded; every other question sees facts as they hold now.
_PAST = re.compile(r"\b(before|used to|previous(ly)?|originally|at first|former(ly)?|earlier|in the past|"
                   r"no longer|anymore|any more|change[ds]?|history|was .{1,40} then)\b", re.IGNORECASE)


def asks_about_the_past(question: str) -> bool:
    """Whether a question asks how a fact was before it changed (search then shows superseded versions, marked)."""
    return bool(_PAST.search(question))


@dataclass
class ToolResult:
    tool: ToolName
    query: str
    knowledge: dict[str, list[str]]  # what the model sees: {"CLIP_3": [...]}
    clips: list[str] = field(default_factory=list)  # clip keys shown ("video#index")
    fallback: str | None = None  # why a different search than asked for was run
    citations: list[str] = field(default_factory=list)  # file passages shown, best first: "lease.pdf, p. 4"

    @property
    def memories(self) -> int:
        return sum(len(v) for v in self.knowledge.values())


def _reader_line(m: RenderedMemory) -> str:
    """A memory as the reader sees it: dates resolved in place, and a superseded fact saying so (shown only when
    the search asked for old versions: `as_of`, `all_versions`)."""
    line = m.times.insert(m.text)
    return f"{line} ({m.superseded})" if m.current is False and m.superseded else line


class MemoryTools:
    """One question's view of memory; remembers which clips were already shown (no repeats across rounds)."""

    def __init__(self, search: MemorySearch, embedder: TextEmbedder, settings: Settings,
                 videos: Sequence[str] | None = None, before_clip: int | None = None,
                 since: datetime | None = None, until: datetime | None = None, all_versions: bool = False,
                 as_of: str | None = None, names: NameBook | None = None) -> None:
        self.search = search
        self.all_versions = all_versions  # show superseded versions of facts too (marked)
        self.as_of = as_of  # facts as they held at this point (a date or VIDEO#N), `as_of.py`
        self.names = names  # the reader's lines name each tagged person (`names.py`); None: tags only (M3)
        self.since, self.until = since, until  # an optional window on the clips' absolute start time
        self.embedder = embedder
        self.cfg = settings.search
        self.settings = settings
        self.videos = list(videos) if videos else None
        self.before_clip = before_clip
        self.shown: list[str] = []
        self.times: dict[str, str] = {}  # clip label -> when it happened, where the clip has a time
        self.dates: dict[str, str] = {}  # clip label -> its calendar date, where the clip has an absolute start
        self.line_scores: dict[tuple[str, str], float] = {}  # (label, line) -> its cosine to the last query
        self.rank_files = True  # a reached file shows its best passages (graphdb/passages.py); off: as before
        self.passages_shown: list[str] = []  # file passages shown in earlier rounds (the next ask shows others)
        self._last_vector: tuple[str, list[float]] | None = None

    # -- presentation --------------------------------------------------------------------------------
    def label(self, source_id: str, clip_index: int) -> str:
        single = self.videos is not None and len(self.videos) == 1
        return f"CLIP_{clip_index}" if single else f"{source_id}/CLIP_{clip_index}"

    def _knowledge(self, results: Sequence[ClipResult]) -> tuple[dict[str, list[str]], list[str]]:
        """What the model sees, in clip order (as the reference showed evidence), and the clip keys shown in the
        search's own order, best first (the order every front end reports)."""
        # The reader sees each time expression with the date it was resolved to at ingestion ("yesterday
        # [= 7 May 2023]"): a small reader does no date arithmetic. The stored text is unchanged.
        name = self.names.line if self.names is not None else str
        shown = [(r, lines) for r in results
                 if (lines := [name(_reader_line(m)) for m in r.memories if not is_equivalence(m.raw_text)])]
        knowledge: dict[str, list[str]] = {}
        for r, lines in sorted(shown, key=lambda x: (x[0].source_id, x[0].clip_index)):
            label = self.label(r.source_id, r.clip_index)
            knowledge[label] = lines
            when = clip_time(r)
            if when:
                self.times[label] = when
            if r.started_at is not None:
                self.dates[label] = f"{r.started_at.day} {r.started_at:%B %Y}"
            for m, line in zip((m for m in r.memories if not is_equivalence(m.raw_text)), lines, strict=True):
                if m.score is not None:
                    self.line_scores[(label, line)] = m.score
        return knowledge, [clip_key(r.source_id, r.clip_index) for r, _ in shown]

    def _vector(self, query: str) -> list[float]:
        if self._last_vector is not None and self._last_vector[0] == query:
            return self._last_vector[1]  # the file passages' ranking embeds the query the search just embedded
        vector = [float(x) for x in query_embed(self.embedder)([query])[0]]
        self._last_vector = (query, vector)
        return vector

    def _rank_files(self, query: str, results: list[ClipResult]) -> tuple[list[ClipResult], list[str]]:
        """The results with each reached file's best passages for `query` in place of its passages in clip order
        (`passages.rank_in_results`), and their citations; results where no line is a file's passage or a turn
        that shared one come back unchanged, with no query run."""
        if not self.rank_files or not any(passages.may_reach_file(m.raw_text) for r in results for m in r.memories):
            return results, []
        ranked = passages.rank_in_results(self.search.ex, self.settings, results, self._vector(query), query,
                                          self.videos, self.before_clip, exclude=self.passages_shown)
        self.passages_shown += [i for i in ranked.shown if i not in self.passages_shown]
        return ranked.results, ranked.citations

    # -- tools ---------------------------------------------------------------------------------------
    def request(self, query: str, mode: Literal["clip", "node"], k: int) -> SearchRequest:
        """This question's scope around one query, as the request every front end's search takes."""
        return SearchRequest(query=query, videos=self.videos, before_clip=self.before_clip, since=self.since,
                             until=self.until, k=k, mode=mode, all_versions=self.all_versions,
                             as_of=self.as_of)

    def search_clip(self, query: str, fallback: bool = True) -> ToolResult:
        """The best clips not shown yet (hybrid: vector floored + full text, fused), all their memories."""
        if not query.strip():
            return ToolResult("search_clip", query, {}, fallback="an empty query: nothing was searched")
        results = run_search(self.search, self._vector, self.request(query, "clip", self.cfg.clip_topk),
                             exclude=self.shown)
        results, citations = self._rank_files(query, results)
        knowledge, keys = self._knowledge(results)
        self.shown += [k for k in keys if k not in self.shown]
        if not knowledge and fallback:
            node = self.search_node(query)
            fresh = [key for key in node.clips if key not in self.shown]
            keep = {self.label(video, int(clip)) for video, clip in (key.rsplit("#", 1) for key in fresh)}
            node.knowledge = {label: lines for label, lines in node.knowledge.items() if label in keep}
            node.clips = fresh
            node.fallback = "no new clip above the threshold; single memories from clips not shown yet"
            return node
        return ToolResult("search_clip", query, knowledge, keys, citations=citations)

    def search_node(self, query: str, k: int | None = None) -> ToolResult:
        """The top memories one by one (hybrid vector + full-text), grouped by clip; scoped to named characters."""
        if not query.strip():
            return ToolResult("search_node", query, {}, fallback="an empty query: nothing was searched")
        results = run_search(self.search, self._vector, self.request(query, "node", k or self.cfg.node_topk))
        results, citations = self._rank_files(query, results)
        knowledge, keys = self._knowledge(results)
        return ToolResult("search_node", query, knowledge, keys, citations=citations)

    def fetch_clip(self, ref: str) -> ToolResult:
        """A clip by label (`CLIP_3` or `video/CLIP_3`); never one after `before_clip`."""
        match = _CLIP_REF.match(ref)
        if match is None:
            return ToolResult("fetch_clip", ref, {}, fallback=f"not a clip label: {ref!r}")
        video = match.group("video") or (self.videos[0] if self.videos and len(self.videos) == 1 else None)
        if video is None or (self.videos and video not in self.videos):
            return ToolResult("fetch_clip", ref, {}, fallback="name the video: VIDEO/CLIP_N")
        results = self.search.fetch_clip(video, int(match.group("clip")), before_clip=self.before_clip)
        knowledge, keys = self._knowledge(results)
        self.shown += [k for k in keys if k not in self.shown]
        return ToolResult("fetch_clip", ref, knowledge, keys)

    # -- files shared in the conversation (m3graph.reasoning.file_tools) ---------------------------------
    def _file_result(self, tool: ToolName, argument: str, look: file_tools.FileLook) -> ToolResult:
        """A file tool's lines as search results are shown: grouped by the clip (session) that shared the file."""
        knowledge: dict[str, list[str]] = {}
        for (video, clip), lines in sorted(look.knowledge.items()):
            if lines:
                knowledge.setdefault(self.label(video, clip), []).extend(lines)
        return ToolResult(tool, argument, knowledge, [clip_key(v, c) for v, c in look.knowledge], look.note)

    def list_files(self, argument: str) -> ToolResult:
        """The conversation's shared files by kind/type, name and date ("pdf before 2024-05-03", "first photo")."""
        look = file_tools.list_files(self.search.ex, argument, self.videos, self.before_clip)
        return self._file_result("list_files", argument, look)

    def look_at_file(self, argument: str) -> ToolResult:
        """A closer look at one shared file: its full surrogate, a page, its faces (named), or a region's OCR."""
        look = file_tools.look_at_file(self.search.ex, self.settings, argument, self.videos, self.before_clip)
        return self._file_result("look_at_file", argument, look)

    def run(self, tool: str, argument: str) -> ToolResult:
        """Runs the named tool; an unknown name is refused (it used to fall back to search_clip silently)."""
        if tool == "search_clip":
            return self.search_clip(argument)
        if tool == "search_node":
            return self.search_node(argument)
        if tool == "fetch_clip":
            return self.fetch_clip(argument)
        if tool == "list_files":
            return self.list_files(argument)
        if tool == "look_at_file":
            return self.look_at_file(argument)
        raise InvalidInputError(f"unknown memory tool {tool!r}: use search_clip, search_node, fetch_clip, list_files "
                                "or look_at_file")

    def m3_search(self, query: str) -> ToolResult:
        """The M3 contract's one search action, routed by what the query asks for."""
        return self.search_node(query) if wants_node_search(query) else self.search_clip(query)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes}:{secs:02d}"


def clip_time(clip: ClipResult) -> str | None:
    """When a clip happened, as the controller shows it: the absolute start where known (a conversation
    session's date, a video's recording time), else its span within the video. Clips can be any length."""
    if clip.started_at is not None:
        return f"{clip.started_at.day} {clip.started_at:%B %Y, %H:%M}"
    if clip.start_s is not None and clip.end_s is not None:
        return f"{_clock(clip.start_s)}-{_clock(clip.end_s)} of the video"
    return None


def describe(result: ToolResult) -> dict[str, Any]:
    """A round's result in the trace; `citations` (the file passages shown, "lease.pdf, p. 4") only where one was
    shown, so traces without files are as they were."""
    out: dict[str, Any] = {"tool": result.tool, "query": result.query, "clips": result.clips,
                           "memories": result.memories, "fallback": result.fallback}
    if result.citations:
        out["citations"] = result.citations
    return out
