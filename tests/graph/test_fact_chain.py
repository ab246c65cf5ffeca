"""Multi-hop questions through `ask`: the controller chains facts through their values (`fact_chain.py`).

A numbered facts list goes in through the product's facts path into the real Neo4j; the reader is a scripted
model (it replays one answer), so what is checked is what the controller showed it: the first round's lines, in
order, and the note saying the chain fired. The facts are made up, so no model knowledge can stand in for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from m3graph.embedding import text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.facts_list import FactsMemorizer
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.parsing import ReadLimits
from m3graph.reasoning.control import READER_SYSTEM, Controller
from m3graph.reasoning.fact_chain import CHAIN_NOTE
from m3graph.service.memory import MemoryService
from m3graph.service.requests import AskRequest
from m3graph.settings import Settings
from tests.helpers.chat_doubles import ScriptedModel

SOURCE = "chain-facts"
FACTS = """Here is a list of facts:
0. The author of Lanterns of Brask is Mira Tolvane.
1. Mira Tolvane is married to Edgar Pelham.
2. Edgar Pelham is a citizen of Portugal.
3. The author of Winter Harbours is Hal Dorne.
4. Hal Dorne is married to Ines Varga.
5. Ann Kell lives in Bergen.
6. The chairperson of the Brask Rowing Club is Ola Fenn.
7. Mira Tolvane is married to Joss Arden.
8. Joss Arden is a citizen of Belgium.
"""
AUTHOR = "The author of Lanterns of Brask is Mira Tolvane."
NEW_SPOUSE = "Mira Tolvane is married to Joss Arden."
OLD_SPOUSE = "Mira Tolvane is married to Edgar Pelham."
CITIZEN = "Joss Arden is a citizen of Belgium."
CAP = 4


@pytest.fixture(scope="module")
def facts(memory_graph: MemoryGraph, settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with suppress(NotFoundError):
        memory_graph.delete_video(SOURCE)
    path: Path = tmp_path_factory.mktemp("chain") / "facts.txt"
    path.write_text(FACTS, encoding="utf-8")
    conv, _ = load_conversation(path, "facts", SOURCE, ReadLimits.of(settings.chat))
    ingest_conversation(memory_graph, conv, text_embedder(settings), FactsMemorizer())
    yield SOURCE
    with suppress(NotFoundError):
        memory_graph.delete_video(SOURCE)


def _ask(graph: MemoryGraph, settings: Settings, question: str, reply: str) -> tuple[dict, ScriptedModel]:
    """`MemoryService.ask` (the path of every front end) with the reader's cap at CAP lines a round."""
    capped = settings.model_copy(update={"llm": settings.llm.model_copy(update={"control_evidence_lines": CAP})})
    model = ScriptedModel([f'{{"answer": "{reply}", "next_query": null}}'])
    embedder = text_embedder(settings)
    service = MemoryService(capped, graph, embedder_factory=lambda: embedder,
                            controller_factory=lambda e, rounds, mode: Controller(model, graph, e, capped,
                                                                                   mode="tools", rounds=3))
    return service.ask(AskRequest(question=question, videos=[SOURCE])).model_dump(), model


def _first_lines(trace: dict) -> list[str]:
    return [line for lines in trace["rounds"][0]["knowledge"].values() for line in lines]


def test_a_two_hop_question_is_answered_from_two_facts(facts: str, memory_graph: MemoryGraph,
                                                       settings: Settings) -> None:
    trace, model = _ask(memory_graph, settings, "Who is the spouse of the author of Lanterns of Brask?",
                        "Joss Arden")
    lines = _first_lines(trace)
    assert "facts chained through their values" in trace["rounds"][0]["note"]
    assert AUTHOR in lines and NEW_SPOUSE in lines and len(lines) <= CAP
    assert lines.index(AUTHOR) < lines.index(NEW_SPOUSE)  # the chain is shown in hop order
    assert trace["answer"] == "Joss Arden" and trace["outcome"] == "answered"
    (request,) = model.requests  # one reader step: the first round already held both facts
    assert request.messages[0].text == READER_SYSTEM
    assert AUTHOR in request.last_user and NEW_SPOUSE in request.last_user
    assert CHAIN_NOTE in request.last_user


def test_the_chain_follows_the_newer_version_of_a_changed_fact(facts: str, memory_graph: MemoryGraph,
                                                               settings: Settings) -> None:
    question = "What is the country of citizenship of the spouse of the author of Lanterns of Brask?"
    trace, model = _ask(memory_graph, settings, question, "Belgium")
    lines = _first_lines(trace)
    assert "2 hops" in trace["rounds"][0]["note"]
    assert [x for x in (AUTHOR, NEW_SPOUSE, CITIZEN) if x in lines] == [AUTHOR, NEW_SPOUSE, CITIZEN]
    assert OLD_SPOUSE not in lines and OLD_SPOUSE not in model.requests[0].last_user  # superseded: not followed
    assert trace["answer"] == "Belgium"


def test_a_question_whose_best_facts_lead_nowhere_is_not_chained(facts: str, memory_graph: MemoryGraph,
                                                                 settings: Settings) -> None:
    """Bergen is the subject of no fact: the round shows what the search alone shows, without a chain."""
    trace, model = _ask(memory_graph, settings, "Where does Ann Kell live?", "Bergen")
    assert "chained" not in trace["rounds"][0]["note"]
    assert CHAIN_NOTE not in model.requests[0].last_user
    assert "Ann Kell lives in Bergen." in _first_lines(trace) and len(_first_lines(trace)) <= CAP


def test_what_the_memory_states_wins_over_what_the_reader_knew(facts: str, memory_graph: MemoryGraph,
                                                               settings: Settings) -> None:
    """A single-hop question whose answer a shown line states: a reader answering from its own knowledge is
    replaced by that line's value (`stated_fact.py`); a multi-hop question keeps the reader's answer."""
    trace, _ = _ask(memory_graph, settings, "Who is the author of Lanterns of Brask?", "Charles Dickens")
    assert trace["answer"] == "Mira Tolvane"
    assert "the memory states it" in (trace["rounds"][-1]["note"] or "")
    trace, _ = _ask(memory_graph, settings, "Who is the spouse of the author of Lanterns of Brask?", "Ola Fenn")
    assert trace["answer"] == "Ola Fenn"  # words left for a further hop: not this check's question
