"""The oracle reader for chat-qa: the controller's own answer step, given the gold evidence instead of a search.

It bounds what reading can reach with a model: retrieval is taken out (the reader sees exactly the question's
evidence turns, nothing else), and everything else is the controller's (tools mode): the same system prompt, the
same rendering of lines (clip labels, each line with its session's date, resolved dates ``[= ...]``, the line cap),
the last-step instruction and answer schema, one repair, the speaker-attribution refusal and the date arithmetic
of duration questions. It runs `Controller._tools` with one round over tools whose every search returns the gold
lines, read from the graph by the turn ids ingestion stored on each memory (`source_ids`), so no text matching is
involved. Results are ordinary chat-qa records, scored by the same answer match and judge.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from m3graph.devkit.eval.chat_misses import evidence_ids
from m3graph.devkit.eval.chat_qa import ChatQuestion
from m3graph.errors import NotFoundError
from m3graph.reasoning.control import AnswerTrace, Controller
from m3graph.reasoning.llm.base import Usage
from m3graph.reasoning.memory_tools import MemoryTools, ToolResult

if TYPE_CHECKING:
    from m3graph.embedding import TextEmbedder
    from m3graph.graphdb.search import MemorySearch
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.reasoning.llm.base import ChatModel
    from m3graph.settings import Settings

GOLD_NOTE = "oracle: the question's gold evidence lines, no search"


def turn_clips(graph: MemoryGraph, video: str) -> dict[str, int]:
    """Turn id -> clip index, from the session keys ingestion stored (``session_N`` holds turns ``DN:*``)."""
    rows = graph.ex.read("chat/source_sessions", source_id=video)
    return {f"D{r['session_key'].removeprefix('session_')}": int(r["clip_index"]) for r in rows
            if r.get("session_key") and str(r["session_key"]).startswith("session_")}


class GoldTools(MemoryTools):
    """Every search returns the gold evidence memories of one question, rendered as the controller renders any
    search result (`MemoryTools._knowledge`)."""

    def __init__(self, search: MemorySearch, embedder: TextEmbedder, settings: Settings, video: str,
                 evidence: Sequence[str], sessions: Mapping[str, int]) -> None:
        super().__init__(search, embedder, settings, [video])
        self.video = video
        self.evidence = set(evidence)
        # "D3:7" -> the clip of session 3
        self.clips = sorted({sessions[e.split(":", 1)[0]] for e in evidence if e.split(":", 1)[0] in sessions})

    def _gold(self, tool: str, query: str) -> ToolResult:
        results = []
        for clip in self.clips:
            for r in self.search.fetch_clip(self.video, clip):
                kept = [m for m in r.memories if {s.split("#", 1)[0] for s in m.source_ids} & self.evidence]
                if kept:
                    results.append(r.model_copy(update={"memories": kept}))
        knowledge, keys = self._knowledge(results)
        return ToolResult("search_node" if tool == "node" else "search_clip", query, knowledge, keys,
                          fallback=GOLD_NOTE)

    def search_node(self, query: str, k: int | None = None) -> ToolResult:
        return self._gold("node", query)

    def search_clip(self, query: str, fallback: bool = True) -> ToolResult:
        return ToolResult("search_clip", query, {}, fallback=GOLD_NOTE)  # the gold lines were shown already


class OracleAnswerer(Controller):
    """The controller in tools mode, one round, over `GoldTools`; questions are looked up by (source, text)."""

    def __init__(self, model: ChatModel, graph: MemoryGraph, embedder: TextEmbedder, settings: Settings,
                 questions: Iterable[tuple[str, ChatQuestion]]) -> None:
        super().__init__(model, graph, embedder, settings, mode="tools", rounds=1, prefetch=True)
        self.gold: dict[tuple[str, str], tuple[str, ...]] = {}
        for video, q in questions:  # the same question twice in one conversation: both evidence lists
            key = (video, " ".join(q.question.split()))
            self.gold[key] = tuple(dict.fromkeys(self.gold.get(key, ()) + evidence_ids(q.evidence)))
        self._sessions: dict[str, dict[str, int]] = {}

    def answer(self, question: str, videos: Sequence[str] | None = None,
               before_clip: int | None = None) -> AnswerTrace:
        question = " ".join(question.split())
        video = videos[0] if videos and len(videos) == 1 else None
        if video is None or (video, question) not in self.gold:
            raise NotFoundError(f"the oracle knows no evidence for {question!r} in {videos!r}")
        if video not in self._sessions:
            self._sessions[video] = turn_clips(self.graph, video)
        tools = GoldTools(self.graph.search, self.embedder, self.settings, video, self.gold[(video, question)],
                          self._sessions[video])
        started = time.perf_counter()
        answer, outcome, rounds = self._tools(question, tools)
        return AnswerTrace(question, answer, outcome, "oracle", self.model.name, [video], None, rounds,
                           sum((r.usage for r in rounds), Usage()), time.perf_counter() - started)


def oracle_factory(questions: Sequence[tuple[str, ChatQuestion]]) -> Callable[[Settings, MemoryGraph], OracleAnswerer]:
    """An answerer factory (settings, graph) for `runner`, over these (source id, question) pairs."""

    def make(settings: Settings, graph: MemoryGraph) -> OracleAnswerer:
        from m3graph.embedding import text_embedder
        from m3graph.reasoning.llm import make_chat_model

        model = make_chat_model(settings.llm.control, settings.llm.models_dir)
        return OracleAnswerer(model, graph, text_embedder(settings), settings, questions)

    return make
