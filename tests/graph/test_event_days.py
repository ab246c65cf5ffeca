"""A question about the time between two events, over the real graph (issue 38): each event searched on its own
and dated, the reader told the two days, and an answer without two dates replaced by the time between them.

Everything but the model's replies is real: a dated chat ingested into the session's Neo4j, searches as Cypher
with real embeddings, a scripted model (`tests/helpers/chat_doubles.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from datetime import UTC, datetime

import pytest

from m3graph.embedding import text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation, Session, Turn
from m3graph.reasoning.control import AnswerTrace, Controller
from m3graph.settings import Settings
from tests.helpers.chat_doubles import ScriptedModel

SOURCE = "ev-demo-plan"
QUESTION = ("How many days do I have between finishing my collaborative filtering prototype and my internal demo "
            "of the hybrid recommender system?")


@pytest.fixture(scope="module")
def plan(memory_graph: MemoryGraph, settings: Settings) -> Iterator[str]:
    with suppress(NotFoundError):
        memory_graph.delete_video(SOURCE)
    sessions = [
        (datetime(2024, 1, 5, 9, tzinfo=UTC), [
            ("Sam", "I'm planning to finish my collaborative filtering prototype by January 20, 2024 for a first "
                    "internal review."),
            ("Ava", "Good plan, let's break the prototype into tasks.")]),
        (datetime(2024, 1, 25, 9, tzinfo=UTC), [
            ("Sam", "I have an internal demo of my hybrid recommender system planned for February 5."),
            ("Ava", "Let's prepare a checklist for the demo.")]),
        (datetime(2024, 3, 1, 9, tzinfo=UTC), [
            ("Sam", "I bought a new bicycle and rode it to the lake."),
            ("Ava", "That sounds like a lovely ride.")]),
    ]
    built = tuple(Session(i, when, tuple(Turn(f"D{i + 1}:{j + 1}", who, text) for j, (who, text) in enumerate(t)))
                  for i, (when, t) in enumerate(sessions))
    ingest_conversation(memory_graph, Conversation(SOURCE, built, ("Sam", "Ava")), text_embedder(settings))
    yield SOURCE
    with suppress(NotFoundError):
        memory_graph.delete_video(SOURCE)


def _ask(graph: MemoryGraph, settings: Settings, question: str, *replies: str) -> tuple[AnswerTrace, ScriptedModel]:
    model = ScriptedModel(list(replies))
    ctl = Controller(model, graph, text_embedder(settings), settings, mode="tools", rounds=3, prefetch=True)
    return ctl.answer(question, [SOURCE]), model


def test_an_answer_without_two_dates_is_replaced_by_the_time_between_the_events(
        plan: str, memory_graph: MemoryGraph, settings: Settings) -> None:
    trace, model = _ask(memory_graph, settings, QUESTION, '{"answer": "14 days", "next_query": null}')
    prompt = model.requests[0].last_user
    assert "The lines that best match the question's two events give:" in prompt
    assert "20 January 2024 (the day its line names" in prompt and "5 February 2024 (the day its line names" in prompt
    shown = [line for lines in trace.evidence.values() for line in lines]
    assert any("collaborative filtering prototype by January 20" in x for x in shown)
    assert any("hybrid recommender system planned for February 5" in x for x in shown)
    assert trace.answer == "about 2 weeks (16 days), from 20 January 2024 to 5 February 2024"
    assert trace.rounds[-1].note is not None and trace.rounds[-1].note.startswith("the reader's '14 days' holds no")


def test_the_readers_two_dates_still_win(plan: str, memory_graph: MemoryGraph, settings: Settings) -> None:
    trace, _ = _ask(memory_graph, settings, QUESTION, '{"answer": "5 January 2024 to 5 February 2024", '
                                                      '"next_query": null}')
    assert trace.answer == "about 4 weeks (31 days), from 5 January 2024 to 5 February 2024"


def test_a_span_the_question_gives_is_left_to_the_reader(plan: str, memory_graph: MemoryGraph,
                                                         settings: Settings) -> None:
    question = "How many days passed between my internal demo and when I bought a bicycle three weeks later?"
    trace, model = _ask(memory_graph, settings, question, '{"answer": "3 weeks", "next_query": null}')
    assert trace.answer == "3 weeks" and "two events give" not in model.requests[0].last_user

