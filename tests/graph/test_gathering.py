"""A list question's first search is widened across sessions (`gathering.py`), over a real Neo4j.

A conversation of four sessions names one of Ann's books in each; with the reader's cap at two new lines a
round, a question about one thing sees at most two lines, a list question up to `LIST_CAP_FACTOR` times as many,
from more sessions, and is told to list every item.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from datetime import UTC, datetime, timedelta

import pytest

from m3graph.embedding import text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation, Session, Turn
from m3graph.reasoning.control import Controller
from m3graph.reasoning.gathering import LIST_CAP_FACTOR, LIST_NOTE
from m3graph.settings import Settings
from tests.helpers.chat_doubles import ScriptedModel

SOURCE = "gather-chat"
BOOKS = ("Dune", "Emma", "Ulysses", "Beloved")
CAP = 2


@pytest.fixture(scope="module")
def chat(memory_graph: MemoryGraph, settings: Settings) -> Iterator[str]:
    with suppress(NotFoundError):
        memory_graph.delete_video(SOURCE)
    start = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
    sessions = []
    for i, book in enumerate(BOOKS):
        turns = (Turn(f"D{i + 1}:1", "Ann", f"I finished reading the book {book} this week."),
                 Turn(f"D{i + 1}:2", "Bob", "My garden tomatoes are finally ripe."),
                 Turn(f"D{i + 1}:3", "Ann", "Reading books before bed helps me relax."),
                 Turn(f"D{i + 1}:4", "Bob", "I fixed the bike chain this morning."))
        sessions.append(Session(i, start + timedelta(days=7 * i), turns))
    ingest_conversation(memory_graph, Conversation(SOURCE, tuple(sessions), ("Ann", "Bob")), text_embedder(settings))
    yield SOURCE
    with suppress(NotFoundError):
        memory_graph.delete_video(SOURCE)


def _ask(graph: MemoryGraph, settings: Settings, question: str) -> tuple[ScriptedModel, int, set[str]]:
    capped = settings.model_copy(update={"llm": settings.llm.model_copy(update={"control_evidence_lines": CAP})})
    model = ScriptedModel(['{"answer": "Dune", "next_query": null}'])
    trace = Controller(model, graph, text_embedder(settings), capped, mode="tools", rounds=2,
                       prefetch=True).answer(question, [SOURCE])
    first = trace.rounds[0]
    assert first.note and first.note.startswith("automatic first search")
    return model, sum(len(v) for v in first.knowledge.values()), set(first.knowledge)


def test_a_list_question_gathers_more_lines_from_more_sessions(chat: str, memory_graph: MemoryGraph,
                                                               settings: Settings) -> None:
    model, shown, clips = _ask(memory_graph, settings, "What books has Ann read?")
    assert CAP < shown <= CAP * LIST_CAP_FACTOR and len(clips) >= 2
    assert LIST_NOTE in model.requests[0].last_user


def test_a_question_about_one_thing_keeps_the_cap(chat: str, memory_graph: MemoryGraph, settings: Settings) -> None:
    model, shown, _ = _ask(memory_graph, settings, "What is the book Ann finished reading?")
    assert 0 < shown <= CAP and LIST_NOTE not in model.requests[0].last_user
