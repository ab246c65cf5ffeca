"""A time tied to an event the facts hold, read as "as of" (issue 38 item 3; m3graph/reasoning/event_as_of.py):
"Where did Nora work when she lived in Lisbon?" shows her facts as they held while Lisbon did, on the real
server, through the controller every front end runs."""

from __future__ import annotations

import re
from contextlib import suppress
from datetime import UTC, datetime

import pytest

from m3graph.embedding import text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation, Session, Turn
from m3graph.reasoning.control import AnswerTrace, Controller
from m3graph.reasoning.event_as_of import anchor_clause, candidate_names, event_as_of
from m3graph.schema import apply_migrations
from m3graph.settings import Settings
from tests.helpers.chat_doubles import ScriptedModel
from tests.helpers.graph import rows

DATED = "ea-nora"
UNDATED = "ea-nora-undated"
SESSIONS = [
    (datetime(2025, 1, 10, 9, tzinfo=UTC), [("Nora", "Hi Bob! I live in Lisbon."),
                                            ("Nora", "I work at the Bakery."),
                                            ("Bob", "Lisbon is lovely.")]),
    (datetime(2025, 3, 3, 9, tzinfo=UTC), [("Nora", "The weather is mild here."),
                                           ("Bob", "Nice.")]),
    (datetime(2025, 6, 1, 9, tzinfo=UTC), [("Nora", "Guess what, I moved to Porto!"),
                                           ("Nora", "I work at the Library now."),
                                           ("Bob", "Congrats on the move.")]),
]


def _ingest(graph: MemoryGraph, settings: Settings, source: str, dated: bool) -> str:
    with suppress(NotFoundError):
        graph.delete_video(source)
    speech = settings.model_copy(update={"chat": settings.chat.model_copy(update={"speech_facts": True})})
    built = tuple(Session(i, when if dated else None,
                          tuple(Turn(f"D{i + 1}:{j + 1}", who, text) for j, (who, text) in enumerate(turns)))
                  for i, (when, turns) in enumerate(SESSIONS))
    old = graph.settings
    graph.settings = speech
    try:
        ingest_conversation(graph, Conversation(source, built, ("Nora", "Bob")), text_embedder(speech))
    finally:
        graph.settings = old
    return source


@pytest.fixture(scope="module")
def dated(memory_graph: MemoryGraph, settings: Settings):  # type: ignore[no-untyped-def]
    yield _ingest(memory_graph, settings, DATED, dated=True)
    memory_graph.delete_video(DATED)


@pytest.fixture(scope="module")
def undated(memory_graph: MemoryGraph, settings: Settings):  # type: ignore[no-untyped-def]
    yield _ingest(memory_graph, settings, UNDATED, dated=False)
    memory_graph.delete_video(UNDATED)


def _ask(graph: MemoryGraph, settings: Settings, question: str, source: str, reply: str) -> tuple[AnswerTrace,
                                                                                                 ScriptedModel]:
    model = ScriptedModel([reply])
    ctl = Controller(model, graph, text_embedder(settings), settings, mode="tools", rounds=3, prefetch=True)
    return ctl.answer(question, [source]), model


def _facts(trace: AnswerTrace) -> list[str]:
    """The fact lines shown ("Nora <character_2> works at the Bakery."), not the turns ("Nora <character_2>: ...")."""
    return [x for lines in trace.evidence.values() for x in lines if not re.match(r"^\w+ <character_\d+>:", x)]


def test_the_clause_and_its_names() -> None:
    assert anchor_clause("When did Nora move?") is None  # asks for a time
    assert anchor_clause("Where did Nora work when she lived in Lisbon?") == ("when", "she lived in Lisbon")
    assert anchor_clause("What did I use before I switched to Postgres?") == ("before", "I switched to Postgres")
    assert anchor_clause("Where did she work after she moved to Porto?") is None  # a range, not a point
    assert anchor_clause("How many days between when I moved and when I started?") is None  # a duration
    # a quoted line is what was said, not an event: its words are not looked up
    assert anchor_clause("How many people were on screen when someone said 'I lived in Lisbon'?") == ("when",
                                                                                                     "someone said")
    names = candidate_names("she lived in Lisbon")
    assert "lisbon" in names and "she" not in names and "in" not in names


def test_when_she_lived_there_reads_the_facts_that_held_then(dated: str, memory_graph: MemoryGraph,
                                                              settings: Settings) -> None:
    point = event_as_of("Where did Nora work when she lived in Lisbon?", memory_graph.ex, [dated])
    assert point is not None and point.as_of.startswith("2025-06-01T08:59:59")  # a second before Porto was said
    trace, model = _ask(memory_graph, settings, "Where did Nora work when she lived in Lisbon?", dated,
                        '{"answer": "the Bakery", "next_query": null}')
    assert trace.rounds[0].note and "facts as of 2025-05-31 ('when she lived in Lisbon'" in trace.rounds[0].note
    facts = _facts(trace)
    assert any("Bakery" in x for x in facts), facts
    assert not any("Library" in x for x in facts), facts  # said after the point: hidden from the facts shown
    assert trace.answer == "the Bakery"
    # without the clause the facts are today's
    trace, _ = _ask(memory_graph, settings, "Where does Nora work?", dated,
                    '{"answer": "the Library", "next_query": null}')
    assert any("Library" in x for x in _facts(trace))


def test_a_question_naming_no_source_finds_the_event_by_name(dated: str, memory_graph: MemoryGraph,
                                                           settings: Settings) -> None:
    """Unscoped, the event is found through `Thing.name_key` (one seek per name, not one per source and name), and
    migration 19 gives a graph written before it the same keys: applied again, it changes nothing more."""
    question = "Where did Nora work when she lived in Lisbon?"
    scoped = event_as_of(question, memory_graph.ex, [dated])
    assert scoped is not None and event_as_of(question, memory_graph.ex, None) == scoped
    keys = "MATCH (t:Thing) WHERE t.video_id = $v RETURN t.thing_key AS key, t.name_key AS name ORDER BY key"
    before = rows(memory_graph, keys, v=dated)
    assert before and all(r["key"] == f"{dated}|{r['name']}" for r in before), before  # set by the write path
    rows(memory_graph, "MATCH (t:Thing) WHERE t.video_id = $v REMOVE t.name_key", v=dated)  # as before 19
    assert event_as_of(question, memory_graph.ex, None) is None  # unscoped lookups go by the key alone
    rows(memory_graph, "MATCH (m:Migration {version: 19}) DELETE m")
    assert apply_migrations(memory_graph.ex, settings) == [19]
    assert rows(memory_graph, keys, v=dated) == before
    assert apply_migrations(memory_graph.ex, settings) == []
    assert event_as_of(question, memory_graph.ex, None) == scoped


def test_a_value_that_still_holds_or_that_no_fact_has_sets_nothing(dated: str, memory_graph: MemoryGraph) -> None:
    assert event_as_of("Where did Nora work when she lived in Porto?", memory_graph.ex, [dated]) is None
    assert event_as_of("Where did Nora work when she lived in Madrid?", memory_graph.ex, [dated]) is None
    assert event_as_of("What did Nora say when Bob called?", memory_graph.ex, [dated]) is None


def test_before_a_change_is_just_before_it(dated: str, memory_graph: MemoryGraph) -> None:
    point = event_as_of("Where did Nora work before she moved to Porto?", memory_graph.ex, [dated])
    assert point is not None and point.as_of.startswith("2025-06-01T08:59:59")
    # Lisbon began nothing (it changed no earlier value): "before" it names no change
    assert event_as_of("Where did Nora work before she lived in Lisbon?", memory_graph.ex, [dated]) is None


def test_an_undated_conversation_uses_the_clip_before_the_change(undated: str, memory_graph: MemoryGraph,
                                                                 settings: Settings) -> None:
    point = event_as_of("Where did Nora work when she lived in Lisbon?", memory_graph.ex, [undated])
    assert point is not None and point.as_of == f"{undated}#1" and point.as_day() is None
    trace, _ = _ask(memory_graph, settings, "Where did Nora work when she lived in Lisbon?", undated,
                    '{"answer": "the Bakery", "next_query": null}')
    facts = _facts(trace)
    assert any("Bakery" in x for x in facts) and not any("Library" in x for x in facts), facts
    # the question's own point in the conversation comes first: asked at session 2, Lisbon still held
    assert event_as_of("Where did Nora work when she lived in Lisbon?", memory_graph.ex, [undated],
                       before_clip=1) is None
