"""The premise check on the real Neo4j (m3graph/reasoning/premise.py): a question naming something no memory in
its scope mentions is answered "Not in memory" before any model call; names in scope, inference questions and the
setting turned off go to the reader as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from m3graph.embedding import TextEmbedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.reasoning.control import Controller
from m3graph.reasoning.premise import NAMES_CHECKED, unmentioned
from tests.helpers.chat_doubles import ScriptedModel
from tests.helpers.locomo import locomo_conversation

VIDEO = "premise-chat"
SESSIONS = {
    1: [{"speaker": "Ann", "dia_id": "D1:1", "text": "I took a short trip to Rome to clear my mind."},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "Rome sounds lovely! I joined the HR team at work."}],
    2: [{"speaker": "Bob", "dia_id": "D2:1", "text": "We finally visited Barcelona with the kids."},
        {"speaker": "Ann", "dia_id": "D2:2", "text": "That is wonderful to hear."}],
    3: [{"speaker": "Ann", "dia_id": "D3:1", "text": "The chief executive officer of Acme is Dana now."}],
}
REPLY = '{"answer": "to clear her mind", "next_query": null}'


@pytest.fixture
def chat(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> MemoryGraph:
    ingest_conversation(graph, locomo_conversation(tmp_path, VIDEO, SESSIONS), embedder)
    return graph


def _ask(graph: MemoryGraph, embedder: TextEmbedder, question: str, before_clip: int | None = None,
         check: bool = True) -> tuple[str | None, ScriptedModel, str | None]:
    model = ScriptedModel([REPLY])
    settings = graph.settings
    if not check:
        settings = settings.model_copy(update={"llm": settings.llm.model_copy(update={"control_premise_check": False})})
    trace = Controller(model, graph, embedder, settings, mode="tools", rounds=2, prefetch=True).answer(
        question, [VIDEO], before_clip)
    return trace.answer, model, trace.rounds[-1].note


def test_a_name_nothing_mentions_is_not_in_memory_without_a_model_call(chat: MemoryGraph,
                                                                       embedder: TextEmbedder) -> None:
    answer, model, note = _ask(chat, embedder, "What did Ann take a trip to Paris for?")
    assert answer == "Not in memory: nothing remembered mentions Paris." and not model.requests
    assert note == "premise check: no memory in scope mentions Paris"
    # Names the memory holds (speakers, places, an acronym) go to the reader.
    answer, model, _ = _ask(chat, embedder, "What did Ann take a trip to Rome for?")
    assert answer == "to clear her mind" and len(model.requests) == 1
    assert unmentioned(chat.ex, "Which team did Bob join, HR or IT?", [VIDEO], None) == ["IT"]
    # A word in a line the reader was shown needs no lookup; the others are still looked up.
    assert unmentioned(chat.ex, "Which team did Bob join, HR or IT?", [VIDEO], None, ["IT said hi"]) == []
    assert unmentioned(chat.ex, "Did Ann see Paris or Rome?", [VIDEO], None, ["Ann: Rome!"]) == ["Paris"]
    assert unmentioned(chat.ex, "Did Bob and Ann go to Barcelona?", [VIDEO], None) == []
    # An abbreviation counts as mentioned where its expansion is; one whose expansion is absent does not.
    assert unmentioned(chat.ex, "Who is the CEO of Acme?", [VIDEO], None) == []
    assert unmentioned(chat.ex, "Who is the CFO of Acme?", [VIDEO], None) == ["CFO"]


def test_the_check_keeps_the_questions_scope_and_its_exemptions(chat: MemoryGraph, embedder: TextEmbedder) -> None:
    # Barcelona is mentioned in session 2 only: as of session 1 nothing remembered mentions it.
    assert unmentioned(chat.ex, "When did Bob visit Barcelona?", [VIDEO], 0) == ["Barcelona"]
    assert unmentioned(chat.ex, "When did Bob visit Barcelona?", [VIDEO], 1) == []
    assert unmentioned(chat.ex, "When did Bob visit Barcelona?", ["premise-other"], None) == ["Bob", "Barcelona"]
    # A question asking for an inference may name what was never said; so may anyone with the check off.
    assert unmentioned(chat.ex, "Would Ann enjoy Vivaldi?", [VIDEO], None) == []
    answer, model, _ = _ask(chat, embedder, "What did Ann take a trip to Paris for?", check=False)
    assert answer == "to clear her mind" and len(model.requests) == 1
    # Lucene syntax in a question is words, never a query: "OR" and "AND" are looked up as names (none mentions
    # them), the quote and the wildcard change nothing.
    assert unmentioned(chat.ex, 'What did Ann say about Rome" OR "x AND Zzz*?', [VIDEO], None) == ["OR", "AND"]
    # Bounded: only the first NAMES_CHECKED names (Ann and five pairs) are looked up.
    many = "Did Ann see " + ", ".join(f"Zq{chr(97 + i)} Zr{chr(97 + i)}" for i in range(20)) + "?"
    assert NAMES_CHECKED == 6
    assert unmentioned(chat.ex, many, [VIDEO], None) == [f"Zq{c} Zr{c}" for c in "abcde"]
