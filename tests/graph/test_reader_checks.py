"""The reader over the real graph (issues 36 and 38): names beside tags, an answer's tag named, a who-question's
role, a time in the question read as "as of", the newest statement winning, and contradictions named.

Everything but the model's replies is real: chats ingested into the session's Neo4j (statements from speech on,
so facts have versions), the demo memory for a video with name facts, searches as Cypher, a scripted model.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import UTC, datetime

import pytest

from m3graph.embedding import text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation, Session, Turn
from m3graph.ingest.demo import DemoResult, load_demo
from m3graph.reasoning.control import AnswerTrace, Controller
from m3graph.settings import Settings
from tests.helpers.chat_doubles import ScriptedModel

DEMO = "rc-demo"
NORA = "rc-nora"
CALLS = "rc-calls"


def _speech(settings: Settings) -> Settings:
    return settings.model_copy(update={"chat": settings.chat.model_copy(update={"speech_facts": True})})


def _chat(graph: MemoryGraph, settings: Settings, source: str, sessions: list[tuple[datetime, list[tuple[str, str]]]]
          ) -> str:
    with suppress(NotFoundError):
        graph.delete_video(source)
    built = tuple(Session(i, when, tuple(Turn(f"D{i + 1}:{j + 1}", who, text) for j, (who, text) in enumerate(turns)))
                  for i, (when, turns) in enumerate(sessions))
    speakers = tuple(dict.fromkeys(who for _, turns in sessions for who, _ in turns))
    speech = _speech(settings)
    old = graph.settings
    graph.settings = speech
    try:
        ingest_conversation(graph, Conversation(source, built, speakers), text_embedder(speech))
    finally:
        graph.settings = old
    return source


@pytest.fixture(scope="module")
def demo(memory_graph: MemoryGraph, settings: Settings) -> DemoResult:
    with suppress(NotFoundError):
        memory_graph.delete_video(DEMO)
    return load_demo(memory_graph, text_embedder(settings), DEMO)


@pytest.fixture(scope="module")
def nora(memory_graph: MemoryGraph, settings: Settings) -> str:
    return _chat(memory_graph, settings, NORA, [
        (datetime(2025, 1, 10, 9, tzinfo=UTC), [("Nora", "Hi Bob! I live in Lisbon and I love the river."),
                                                ("Bob", "Lisbon is lovely.")]),
        (datetime(2025, 2, 3, 9, tzinfo=UTC), [("Nora", "I have never used Rust, I only write Go."),
                                               ("Bob", "Go is fine.")]),
        (datetime(2025, 6, 1, 9, tzinfo=UTC), [("Nora", "Guess what, I moved to Porto last month!"),
                                               ("Bob", "Congrats on the move."),
                                               ("Nora", "I set up a Rust service for the new team last week.")]),
    ])


@pytest.fixture(scope="module")
def calls(memory_graph: MemoryGraph, settings: Settings) -> str:
    return _chat(memory_graph, settings, CALLS, [
        (datetime(2025, 3, 2, 9, tzinfo=UTC), [("Ann", "Remember to call the doctor tomorrow morning."),
                                               ("Bob", "Sure, I will put the coffee on the green table.")]),
    ])


def _ask(graph: MemoryGraph, settings: Settings, question: str, videos: list[str], *replies: str) -> tuple[
        AnswerTrace, ScriptedModel]:
    model = ScriptedModel(list(replies))
    ctl = Controller(model, graph, text_embedder(settings), settings, mode="tools", rounds=3, prefetch=True)
    return ctl.answer(question, videos), model


def _shown(trace: AnswerTrace) -> list[str]:
    return [line for lines in trace.evidence.values() for line in lines]


# ------------------------------------------------------------------------------------------- names (issue 36)


def test_the_reader_sees_names_beside_tags_and_an_answer_tag_is_named(demo: DemoResult, memory_graph: MemoryGraph,
                                                                      settings: Settings) -> None:
    jack = memory_graph.characters_of([demo.faces["jack"]])[demo.faces["jack"]]
    trace, model = _ask(memory_graph, settings, "Who reads the newspaper?", [DEMO],
                        f'{{"answer": "<character_{jack}>", "next_query": null}}')
    prompt = model.requests[0].last_user
    assert f"Jack (<character_{jack}>) sits at the table reading a newspaper." in prompt
    assert f"Jack (<character_{jack}>)'s name" not in prompt  # a line that names the person is left as it was
    assert trace.answer == f"Jack (character_{jack})"
    assert trace.rounds[-1].note is not None and "names:" in trace.rounds[-1].note
    assert f"Jack (<character_{jack}>) sits at the table reading a newspaper." in _shown(trace)


def test_the_m3_contract_keeps_bare_tags(demo: DemoResult, memory_graph: MemoryGraph, settings: Settings) -> None:
    model = ScriptedModel(["Action: [Search]\nContent: who reads the newspaper", "Action: [Answer]\nContent: x"])
    ctl = Controller(model, memory_graph, text_embedder(settings), settings, mode="m3", rounds=2)
    trace = ctl.answer("Who reads the newspaper?", [DEMO])
    assert trace.answer == "x"
    shown = _shown(trace)
    assert shown and not any("Jack (<character_" in x for x in shown)


def test_a_who_question_about_whom_it_is_done_to_gets_the_role(calls: str, memory_graph: MemoryGraph,
                                                              settings: Settings) -> None:
    chars = {r["name"]: r["char_id"] for r in memory_graph.ex.read("explore/sessions", source_id=CALLS)[0]["speakers"]}
    ann = chars["Ann"]
    trace, _ = _ask(memory_graph, settings, "Who should be called tomorrow morning?", [CALLS],
                    f'{{"answer": "character_{ann}", "next_query": null}}')
    assert any("call the doctor" in x for x in _shown(trace))
    assert trace.answer == "The doctor"
    assert trace.rounds[-1].note is not None and "who-question" in trace.rounds[-1].note
    # a bare tag where no role is named becomes the name
    trace, _ = _ask(memory_graph, settings, "Who asked to call the doctor?", [CALLS],
                    f'{{"answer": "<character_{ann}>", "next_query": null}}')
    assert trace.answer == f"Ann (character_{ann})"


# ------------------------------------------------------------------------------------- times and recency (38)


def test_a_named_time_reads_facts_as_of_then(nora: str, memory_graph: MemoryGraph, settings: Settings) -> None:
    trace, model = _ask(memory_graph, settings, "Where did Nora live in April 2025?", [NORA],
                        '{"answer": "Porto", "next_query": null}')
    prompt = model.requests[0].last_user
    assert trace.rounds[0].note and "facts as of 2025-04-30 ('April 2025' in the question)" in trace.rounds[0].note
    assert "[10 January 2025] Nora lives in Lisbon. (held on 30 April 2025)" in prompt
    assert "[1 June 2025] Nora moved to Porto." in prompt
    assert trace.answer == "Lisbon"  # the reader's "Porto" was said after the point the question names
    assert trace.rounds[-1].note is not None and trace.rounds[-1].note.startswith("recency")
    facts = [x for x in _shown(trace) if not x.startswith(("Nora <", "Bob <"))]
    assert not any("Porto" in x for x in facts)  # the Porto fact did not hold yet: the as-of search hides it


def test_the_newest_statement_wins_now(nora: str, memory_graph: MemoryGraph, settings: Settings) -> None:
    trace, model = _ask(memory_graph, settings, "Where does Nora live?", [NORA],
                        '{"answer": "She lives in Lisbon", "next_query": null}')
    assert "latest, holds now" in model.requests[0].last_user
    assert trace.answer == "She lives in Porto"
    # asked about the past, the older value stands
    trace, _ = _ask(memory_graph, settings, "Where did Nora live before she moved?", [NORA],
                    '{"answer": "Lisbon", "next_query": null}')
    assert trace.answer == "Lisbon"


def test_a_denied_and_affirmed_statement_is_named_not_answered_yes_or_no(nora: str, memory_graph: MemoryGraph,
                                                                         settings: Settings) -> None:
    trace, model = _ask(memory_graph, settings, "Has Nora ever used Rust?", [NORA],
                        '{"answer": "No", "next_query": null}')
    assert "These statements conflict" in model.requests[0].last_user
    answer = trace.answer or ""
    assert answer.startswith("The memory holds conflicting statements")
    assert 'on 3 February 2025, Nora said "I have never used Rust' in answer
    assert 'on 1 June 2025, Nora said "I set up a Rust service' in answer and answer.endswith("Which one holds?")
    assert trace.rounds[-1].note is not None and trace.rounds[-1].note.startswith("contradiction")


def test_a_yes_no_question_about_oneself_brings_the_line_that_denies_it(nora: str, memory_graph: MemoryGraph,
                                                                        settings: Settings) -> None:
    # one line a round: the question's own search shows one line, the denial search adds the denial beside it
    one = settings.model_copy(update={"llm": settings.llm.model_copy(update={"control_evidence_lines": 1})})
    trace, model = _ask(memory_graph, one, "Have I ever set up a Rust service?", [NORA],
                        '{"answer": "Yes", "next_query": null}')
    shown = _shown(trace)
    assert any("I have never used Rust" in x for x in shown)
    assert trace.rounds[0].note is not None and "denying it ('I have never set up a Rust service')" in \
        trace.rounds[0].note
    assert "I have never used Rust" in model.requests[0].last_user
    # without the denial search the one line shown would be the affirmation alone
    assert sum("Rust" in x for x in shown) == 2

