"""The H-round controller over the real graph (demo memory, real text embeddings), with a scripted model.

The scripted model fixes the *replies*; everything else is real: searches run as Cypher on the session's
Neo4j, and the assertions check both the outcome and the exact protocol sent to the model.
"""

from __future__ import annotations

import json
from contextlib import suppress
from datetime import UTC, datetime

import pytest

from m3graph.embedding import text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipResult
from m3graph.ingest.demo import DemoResult, load_demo
from m3graph.reasoning.control import (
    FINAL_SCHEMA,
    M3_INSTRUCTION,
    M3_LAST_ROUND,
    M3_MUST_ANSWER,
    M3_REPAIR,
    NOT_IN_MEMORY,
    READ_SCHEMA,
    READER_LAST,
    READER_NOT_LABELS,
    READER_REPAIR,
    READER_SYSTEM,
    Controller,
    copies_a_line,
    only_clip_labels,
    parse_m3_action,
    parse_reader_reply,
    query_key,
    render_evidence,
    strip_thinking,
)
from m3graph.reasoning.llm.base import ChatResult, Usage
from m3graph.reasoning.memory_tools import clip_time, wants_node_search
from m3graph.settings import Settings
from tests.helpers.chat_doubles import ScriptedModel

VIDEO = "ctl-demo"


@pytest.fixture(scope="module")
def demo(memory_graph: MemoryGraph, settings: Settings) -> DemoResult:
    with suppress(NotFoundError):
        memory_graph.delete_video(VIDEO)
    return load_demo(memory_graph, text_embedder(settings), VIDEO)


def controller(model: ScriptedModel, graph: MemoryGraph, settings: Settings, mode: str = "m3",
               rounds: int = 5, prefetch: bool = False) -> Controller:
    return Controller(model, graph, text_embedder(settings), settings, mode=mode, rounds=rounds, prefetch=prefetch)


def knowledge_of(text: str) -> dict[str, list[str]]:
    assert text.startswith("Searched knowledge: ")
    payload = text[len("Searched knowledge: "):].split(M3_INSTRUCTION)[0]
    return json.loads(payload.split("\n(")[0])


# ------------------------------------------------------------------------------------ parsing (no graph)


@pytest.mark.parametrize(("reply", "expected"), [
    ("Action: [Answer]\nContent: Mango.", ("answer", "Mango.")),
    ("<think>she ate it in clip 3</think>\nAction: [Search]\nContent: What fruit does Mia like?\nmore",
     ("search", "What fruit does Mia like?")),
    ("action: answer\ncontent: Lily", ("answer", "Lily")),
    ("Action: [Search]\nContent:   ", None),
    ("I think it is a mango.", None),
    ("<think>the thinking ran out of tokens and never clo", None),
    ("Content: Mango. Action: [Answer]", None),
    ("Action: [Answer] or [Search]\nContent: your answer, or one search query that differs", None),
])
def test_parse_m3_action(reply: str, expected: tuple[str, str] | None) -> None:
    assert parse_m3_action(reply) == expected


def test_strip_thinking_keeps_only_the_final_part() -> None:
    assert strip_thinking("<think>a</think>x<think>b</think> y ") == "y"
    assert strip_thinking("plain") == "plain"


@pytest.mark.parametrize(("query", "node"), [
    ("What is the character id of Mia", True), ("Character ID of Lily?", True), ("character-id for Jack", True),
    ("What is the name of <character_2>", True), ("<character_4> fruit", True), ("Who is called Jack?", True),
    ("What fruit does Mia like?", False), ("Where is the newspaper?", False),
])
def test_search_routing_is_structural(query: str, node: bool) -> None:
    assert wants_node_search(query) is node


# ------------------------------------------------------------------------------------ M3 contract


def test_m3_contract_search_then_answer(demo: DemoResult, memory_graph: MemoryGraph,
                                        settings: Settings) -> None:
    model = ScriptedModel(["<think>I need Mia's food.</think>\nAction: [Search]\nContent: Mia takes a mango",
                           "Action: [Answer]\nContent: Mango."])
    trace = controller(model, memory_graph, settings).answer("What fruit does Mia like?", [VIDEO])
    assert trace.answer == "Mango." and trace.outcome == "answered" and trace.mode == "m3"
    first, second = model.requests
    assert first.messages[0].role == "system" and "What fruit does Mia like?" in first.messages[0].text
    assert first.messages[1].text == "Searched knowledge: {}" + M3_INSTRUCTION
    seen = knowledge_of(second.messages[-1].text)
    assert second.messages[-1].text.endswith(M3_INSTRUCTION)
    assert all(key.startswith("CLIP_") for key in seen) and 1 <= len(seen) <= settings.search.clip_topk
    lines = [x for v in seen.values() for x in v]
    assert any("mango" in x for x in lines)
    assert all("<face_" not in x and "<voice_" not in x and not x.startswith("Equivalence") for x in lines)
    assert any("<character_" in x for x in lines)
    assert [r.action for r in trace.rounds] == ["search_clip", "answer"]
    assert trace.rounds[0].result is not None and trace.rounds[0].result["clips"]
    assert trace.usage.prompt_tokens == 200 and trace.evidence == seen


def test_clips_are_not_shown_twice(demo: DemoResult, memory_graph: MemoryGraph, settings: Settings) -> None:
    query = "Action: [Search]\nContent: Mia takes a mango from the fruit bowl"
    model = ScriptedModel([query, query, "Action: [Answer]\nContent: Mango."])
    trace = controller(model, memory_graph, settings).answer("What fruit does Mia like?", [VIDEO])
    first, second = (set(r.result["clips"]) for r in trace.rounds[:2] if r.result)
    assert first and not first & second
    # Hybrid ranking usually finds other clips for the same words; with none left it falls back to single memories.
    assert trace.rounds[1].result is not None and (second or trace.rounds[1].result["fallback"])


def test_identity_queries_use_node_search(demo: DemoResult, memory_graph: MemoryGraph,
                                          settings: Settings) -> None:
    chars = memory_graph.characters_of([demo.faces["mia"]])
    mia = chars[demo.faces["mia"]]
    model = ScriptedModel(["Action: [Search]\nContent: What is the character id of Mia",
                           f"Action: [Search]\nContent: What does <character_{mia}> eat?",
                           "Action: [Answer]\nContent: Mia eats a mango."])
    trace = controller(model, memory_graph, settings).answer("What does Mia eat?", [VIDEO])
    assert [r.action for r in trace.rounds] == ["search_node", "search_node", "answer"]
    names = [x for v in trace.rounds[0].knowledge.values() for x in v]
    assert f"<character_{mia}>'s name is Mia." in names
    scoped = [x for v in trace.rounds[1].knowledge.values() for x in v]
    assert scoped and all(f"<character_{mia}>" in x for x in scoped)


def test_last_round_is_forced_and_a_search_there_is_corrected(demo: DemoResult, memory_graph: MemoryGraph,
                                                               settings: Settings) -> None:
    model = ScriptedModel(["Action: [Search]\nContent: Who reads the newspaper",
                           "Action: [Search]\nContent: newspaper again",
                           "Action: [Answer]\nContent: Jack."])
    trace = controller(model, memory_graph, settings, rounds=2).answer("Who reads the newspaper?", [VIDEO])
    assert trace.outcome == "forced" and trace.answer == "Jack."
    final_request = model.requests[1]
    assert final_request.last_user.endswith(M3_INSTRUCTION + M3_LAST_ROUND)
    assert model.requests[2].last_user == M3_MUST_ANSWER
    assert len(trace.rounds) == 2 and len(trace.rounds[1].raw) == 2


def test_unusable_replies_fail_explicitly(demo: DemoResult, memory_graph: MemoryGraph,
                                          settings: Settings) -> None:
    truncated = ChatResult("<think>" + "hmm " * 50, Usage(10, 1024), 0.0, "length", "scripted")
    model = ScriptedModel([truncated, "I really cannot say.", "Action: [Search]\nContent: x", "still searching"])
    trace = controller(model, memory_graph, settings, rounds=2).answer("Who reads the newspaper?", [VIDEO])
    assert trace.outcome == "failed" and trace.answer is None
    assert [r.action for r in trace.rounds] == ["invalid", "invalid"]
    assert model.requests[1].last_user == M3_REPAIR  # a correction, never a silent empty search
    assert all(r.result is None for r in trace.rounds)


def test_before_clip_limits_every_tool(demo: DemoResult, memory_graph: MemoryGraph,
                                       settings: Settings) -> None:
    model = ScriptedModel(["Action: [Search]\nContent: mango", "Action: [Search]\nContent: character id of Mia",
                           "Action: [Answer]\nContent: unknown"])
    trace = controller(model, memory_graph, settings).answer("What fruit?", [VIDEO], before_clip=1)
    shown = [key for r in trace.rounds for key in r.knowledge]
    assert shown and all(int(key.split("_")[1]) <= 1 for key in shown)
    assert "mango" not in json.dumps(trace.evidence)


# ------------------------------------------------------------------------------------ tools mode: the reader


def _searches(trace_rounds: list) -> list[tuple[str, str]]:
    return [(r.action, r.content) for r in trace_rounds if r.action.startswith("search")]


def test_reader_answers_when_the_evidence_holds_the_answer(demo: DemoResult, memory_graph: MemoryGraph,
                                                           settings: Settings) -> None:
    model = ScriptedModel(['{"answer": "A mango", "next_query": null}'])
    question = "What fruit does Mia like to eat instead of coffee?"
    trace = controller(model, memory_graph, settings, mode="tools", prefetch=True).answer(question, [VIDEO])
    assert trace.answer == "A mango" and trace.outcome == "answered" and len(model.requests) == 1
    assert [r.action for r in trace.rounds] == ["search_node", "answer"]
    assert trace.rounds[0].raw == [] and trace.rounds[0].usage.total_tokens == 0
    prompt = model.requests[0].last_user
    assert prompt.startswith("Search results for the question:") and "mango" in prompt
    assert prompt.endswith(f"Question: {question}")  # the question restated right below the evidence
    assert model.requests[0].kwargs["json_schema"] == READ_SCHEMA
    assert "30" not in model.requests[0].messages[0].text  # no fixed clip length assumed
    # no file was shared in this memory: the reader's prompt is exactly the one without file tools (the LoCoMo and
    # generated-media prompts are unchanged by the file tools' wiring)
    assert model.requests[0].messages[0].text == READER_SYSTEM


def test_no_query_is_searched_twice(demo: DemoResult, memory_graph: MemoryGraph,
                                    settings: Settings) -> None:
    question = "Where did Jack put the newspaper?"
    model = ScriptedModel([
        '{"answer": null, "next_query": "where did jack put the NEWSPAPER"}',  # the question again
        '{"answer": null, "next_query": "newspaper table Jack"}',
        '{"answer": null, "next_query": "Jack table newspaper?"}',  # the same words as the last query
        '{"answer": "On the green table."}'])
    trace = controller(model, memory_graph, settings, mode="tools", prefetch=True).answer(question, [VIDEO])
    assert trace.answer == "On the green table." and trace.outcome == "forced"
    searches = _searches(trace.rounds)
    assert searches == [("search_node", question), ("search_clip", question), ("search_node", "newspaper table Jack")]
    keys = [query_key(q) for _, q in searches[1:]]
    assert len(set(keys)) == len(keys) and query_key(question) not in keys[1:]
    assert trace.rounds[1].note and "repeats" in trace.rounds[1].note
    assert trace.rounds[3].action == "invalid" and "answer" in (trace.rounds[3].note or "")
    final = model.requests[-1]
    assert final.kwargs["json_schema"] == FINAL_SCHEMA and final.last_user.endswith(READER_LAST)
    shown = [(label, line) for r in trace.rounds for label, lines in r.knowledge.items() for line in lines]
    assert len(shown) == len(set(shown))  # no memory line is shown twice


def test_a_query_copied_from_the_evidence_is_a_repeat(demo: DemoResult, memory_graph: MemoryGraph,
                                                       settings: Settings) -> None:
    model = ScriptedModel(['{"answer": null, "next_query": "<character_1> sits at the table reading a newspaper."}',
                           '{"answer": "Jack"}'])
    trace = controller(model, memory_graph, settings, mode="tools", prefetch=True, rounds=2).answer(
        "Who reads the newspaper?", [VIDEO])
    lines = [x for r in trace.rounds for v in r.knowledge.values() for x in v]
    assert any("reading a newspaper" in x for x in lines)
    assert copies_a_line("<character_1> sits at the table reading a newspaper.", lines)
    assert [a for a, _ in _searches(trace.rounds)] == ["search_node", "search_clip"]


def test_rounds_extend_the_prompt_and_cap_the_evidence(demo: DemoResult, memory_graph: MemoryGraph,
                                                       settings: Settings) -> None:
    capped = settings.model_copy(update={"llm": settings.llm.model_copy(update={"control_evidence_lines": 3})})
    model = ScriptedModel(['{"answer": null, "next_query": "coffee"}', '{"answer": null, "next_query": "breakfast"}',
                           '{"answer": "Jack"}'])
    trace = controller(model, memory_graph, capped, mode="tools", prefetch=True, rounds=3).answer(
        "Who is tired in the morning?", [VIDEO])
    assert trace.answer == "Jack"
    assert all(sum(len(v) for v in r.knowledge.values()) <= 3 for r in trace.rounds)
    for before, after in zip(model.requests, model.requests[1:], strict=False):
        assert after.messages[:len(before.messages)] == before.messages  # a stable prefix: the KV cache is reused


def test_abstains_when_no_step_finds_the_answer(demo: DemoResult, memory_graph: MemoryGraph,
                                                settings: Settings) -> None:
    model = ScriptedModel(['{"answer": null, "next_query": "moons of Jupiter telescope"}', '{"answer": null}'])
    trace = controller(model, memory_graph, settings, mode="tools", prefetch=True, rounds=2).answer(
        "Which telescope did Lily buy?", [VIDEO])
    assert trace.answer == NOT_IN_MEMORY and trace.outcome == "abstained"
    assert trace.rounds[-1].action == "answer" and trace.rounds[-1].note


def test_abstains_without_a_model_call_when_nothing_matches(demo: DemoResult, memory_graph: MemoryGraph,
                                                            settings: Settings) -> None:
    model = ScriptedModel([])
    trace = controller(model, memory_graph, settings, mode="tools", prefetch=True).answer(
        "What fruit does Mia like?", ["ctl-no-such-video"])
    assert trace.answer == NOT_IN_MEMORY and trace.outcome == "abstained" and not model.requests


def test_invalid_reader_replies_are_corrected_then_recorded(demo: DemoResult, memory_graph: MemoryGraph,
                                                            settings: Settings) -> None:
    model = ScriptedModel(["not json", "still not json", "nope", "{}"])
    trace = controller(model, memory_graph, settings, mode="tools", prefetch=True, rounds=2).answer(
        "Who reads the newspaper?", [VIDEO])
    assert trace.outcome == "failed" and trace.answer is None
    assert [r.action for r in trace.rounds] == ["search_node", "invalid", "invalid"]
    assert model.requests[1].last_user == READER_REPAIR


def test_an_answer_of_clip_labels_is_asked_again_once(demo: DemoResult, memory_graph: MemoryGraph,
                                                      settings: Settings) -> None:
    def reader(*answers: str) -> tuple[ScriptedModel, str | None]:
        model = ScriptedModel([json.dumps({"answer": a, "next_query": None}) for a in answers])
        tools = controller(model, memory_graph, settings, mode="tools", prefetch=True, rounds=2)
        return model, tools.answer("Who reads the newspaper?", [VIDEO]).answer

    model, answer = reader("CLIP_1, CLIP_2", "The man")
    assert answer == "The man" and model.requests[1].last_user == READER_NOT_LABELS
    # Asked again, labels are kept: a second correction would only cost another call.
    model, answer = reader("CLIP_1", "CLIP_1")
    assert answer == "CLIP_1" and len(model.requests) == 2


@pytest.mark.parametrize(("question", "answer", "labels"), [
    ("Which events has Jon joined?", "CLIP_11, CLIP_13, CLIP_15 and CLIP_17", True),
    ("Which events has Jon joined?", "video-1/CLIP_3.", True),
    ("Which events has Jon joined?", "the fair (CLIP_11)", False),
    ("In which clip does the man read?", "CLIP_3", False),
    ("When does the man read?", "CLIP_3", False),
])
def test_only_clip_labels(question: str, answer: str, labels: bool) -> None:
    assert only_clip_labels(question, answer) is labels


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"answer": "A mango", "next_query": null}', ("A mango", None)),
    ('<think>x</think>{"answer": null, "next_query": " mango  bowl "}', (None, "mango bowl")),
    ('{"answer": "null", "next_query": ""}', (None, None)),
    ('{"answer": "Jack"}', ("Jack", None)),
    ('{"tool": "answer"}', None),
    ('{"answer": "Jon and Gina both lost their jobs and sta', ("Jon and Gina both lost their jobs and sta", None)),
    ('{"answer": "a \\', ("a", None)),  # cut inside an escape
    ('{"answer": null, "next_query": "dance', None),  # a cut query is not an answer
    # A cut answer that loops ends where it starts repeating itself; a closed one is the model's own.
    ('{"answer": "Luna, Oliver, Bailey, Oscar, Oliver, Bailey, Oscar, Oliver, Bai', ("Luna, Oliver, Bailey, Oscar",
                                                                                    None)),
    ('{"answer": "Oliver, Oliver", "next_query": null}', ("Oliver, Oliver", None)),
    ("Jack", None),
])
def test_parse_reader_reply(reply: str, expected: tuple[str | None, str | None] | None) -> None:
    assert parse_reader_reply(reply) == expected


def test_empty_question_is_refused(memory_graph: MemoryGraph, settings: Settings) -> None:
    with pytest.raises(ValueError, match="empty"):
        controller(ScriptedModel([]), memory_graph, settings).answer("   ")


def test_evidence_shows_each_clip_time_and_session_dates() -> None:
    session = ClipResult(source_id="chat", clip_index=3, start_s=900.0, end_s=1500.0, score=None, memories=[],
                         started_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC))
    video = ClipResult(source_id="tm", clip_index=2, start_s=60.0, end_s=75.5, score=None, memories=[])
    assert clip_time(session) == "8 May 2023, 13:56" and clip_time(video) == "1:00-1:16 of the video"
    text = render_evidence({"CLIP_2": ["a"], "CLIP_3": ["b"]},
                           {"CLIP_2": "1:00-1:16 of the video", "CLIP_3": "8 May 2023, 13:56"},
                           {"CLIP_3": "8 May 2023"})
    assert text == "CLIP_2 (1:00-1:16 of the video):\n- a\nCLIP_3 (8 May 2023, 13:56):\n- [8 May 2023] b"


def test_the_time_between_two_events_is_computed_not_read(demo: DemoResult, memory_graph: MemoryGraph,
                                                          settings: Settings) -> None:
    """The reader gives the two dates; the arithmetic is the duration tool's (m3graph/reasoning/durations.py)."""
    model = ScriptedModel(['{"answer": "7 May 2023 to 28 May 2023", "next_query": null}'])
    question = "How many days after Jack read the newspaper did Mia eat the mango?"
    trace = controller(model, memory_graph, settings, mode="tools", prefetch=True).answer(question, [VIDEO])
    assert trace.answer == "3 weeks (21 days), from 7 May 2023 to 28 May 2023"
    assert "DATE to DATE" in model.requests[0].last_user
    assert trace.rounds[-1].note == "date arithmetic on the reader's '7 May 2023 to 28 May 2023'"
    # A question that is not about the time between two events is answered as the reader wrote it.
    model = ScriptedModel(['{"answer": "7 May 2023 to 28 May 2023", "next_query": null}'])
    trace = controller(model, memory_graph, settings, mode="tools", prefetch=True).answer(
        "When did Mia eat the mango?", [VIDEO])
    assert trace.answer == "7 May 2023 to 28 May 2023" and "DATE to DATE" not in model.requests[0].last_user
