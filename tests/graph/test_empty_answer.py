"""A reader reply of punctuation alone ("," — what the 1.5B reader gave for BEAM knowledge-update questions, which
`ask` returned as the answer) answers nothing: the controller searches on, and at the last round says "Not in
memory" instead of returning ",". On the real Neo4j, with a scripted reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from m3graph.embedding import TextEmbedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.reasoning.control import NOT_IN_MEMORY, Controller
from tests.helpers.chat_doubles import ScriptedModel
from tests.helpers.locomo import locomo_conversation

VIDEO = "empty-answer-chat"
SESSIONS = {1: [{"speaker": "Ann", "dia_id": "D1:1", "text": "I took a short trip to Rome to clear my mind."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Rome sounds lovely!"}]}


@pytest.fixture
def chat(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> MemoryGraph:
    ingest_conversation(graph, locomo_conversation(tmp_path, VIDEO, SESSIONS), embedder)
    return graph


def _answer(graph: MemoryGraph, embedder: TextEmbedder, replies: list[str], rounds: int) -> tuple[str | None, str]:
    model = ScriptedModel(list(replies))
    trace = Controller(model, graph, embedder, graph.settings, mode="tools", rounds=rounds, prefetch=True).answer(
        "Why did Ann go to Rome?", [VIDEO], None)
    return trace.answer, trace.outcome


def test_a_comma_is_not_an_answer(chat: MemoryGraph, embedder: TextEmbedder) -> None:
    answer, outcome = _answer(chat, embedder, ['{"answer": ",", "next_query": "Ann trip Rome reason"}',
                                               '{"answer": "to clear her mind", "next_query": null}'], rounds=3)
    assert (answer, outcome) == ("to clear her mind", "answered")
    answer, outcome = _answer(chat, embedder, ['{"answer": ",", "next_query": null}'] * 4, rounds=2)
    assert (answer, outcome) == (NOT_IN_MEMORY, "abstained")
