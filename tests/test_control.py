"""The H-round controller over the real graph (demo memory, real text embeddings), with a scripted model.

The scripted model fixes the *replies*; everything else is real: searches run as Cypher on the session's
Neo4j, and the assertions check both the outcome and the exact protocol sent to the model.
"""

from __future__ import annotations

import json
from contextlib import suppress

import pytest
from chat_doubles import ScriptedModel, tool_reply
from graph_fixtures import memory_graph  # noqa: F401

from m3graph.embedding import text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.demo import DemoResult, load_demo
from m3graph.reasoning.control import (
    M3_INSTRUCTION,
    M3_LAST_ROUND,
    M3_MUST_ANSWER,
    M3_REPAIR,
    Controller,
    parse_m3_action,
    strip_thinking,
)
from m3graph.reasoning.llm.base import ChatResult, Usage
from m3graph.reasoning.memory_tools import wants_node_search
from m3graph.settings import Settings

VIDEO = "ctl-demo"


@pytest.fixture(scope="module")
def demo(memory_graph: MemoryGraph, settings: Settings) -> DemoResult:  # noqa: F811
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


def test_m3_contract_search_then_answer(demo: DemoResult, memory_graph: MemoryGraph,  # noqa: F811
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


def test_clips_are_not_shown_twice(demo: DemoResult, memory_graph: MemoryGraph, settings: Settings) -> None:  # noqa: F811
    query = "Action: [Search]\nContent: Mia takes a mango from the fruit bowl"
    model = ScriptedModel([query, query, "Action: [Answer]\nContent: Mango."])
    trace = controller(model, memory_graph, settings).answer("What fruit does Mia like?", [VIDEO])
    first, second = (set(r.result["clips"]) for r in trace.rounds[:2] if r.result)
    assert first and not first & second
    assert trace.rounds[1].result is not None and trace.rounds[1].result["fallback"]


def test_identity_queries_use_node_search(demo: DemoResult, memory_graph: MemoryGraph,  # noqa: F811
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


def test_last_round_is_forced_and_a_search_there_is_corrected(demo: DemoResult, memory_graph: MemoryGraph,  # noqa: F811
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


def test_unusable_replies_fail_explicitly(demo: DemoResult, memory_graph: MemoryGraph,  # noqa: F811
                                          settings: Settings) -> None:
    truncated = ChatResult("<think>" + "hmm " * 50, Usage(10, 1024), 0.0, "length", "scripted")
    model = ScriptedModel([truncated, "I really cannot say.", "Action: [Search]\nContent: x", "still searching"])
    trace = controller(model, memory_graph, settings, rounds=2).answer("Who reads the newspaper?", [VIDEO])
    assert trace.outcome == "failed" and trace.answer is None
    assert [r.action for r in trace.rounds] == ["invalid", "invalid"]
    assert model.requests[1].last_user == M3_REPAIR  # a correction, never a silent empty search
    assert all(r.result is None for r in trace.rounds)


def test_before_clip_limits_every_tool(demo: DemoResult, memory_graph: MemoryGraph,  # noqa: F811
                                       settings: Settings) -> None:
    model = ScriptedModel(["Action: [Search]\nContent: mango", "Action: [Search]\nContent: character id of Mia",
                           "Action: [Answer]\nContent: unknown"])
    trace = controller(model, memory_graph, settings).answer("What fruit?", [VIDEO], before_clip=1)
    shown = [key for r in trace.rounds for key in r.knowledge]
    assert shown and all(int(key.split("_")[1]) <= 1 for key in shown)
    assert "mango" not in json.dumps(trace.evidence)


# ------------------------------------------------------------------------------------ tool calling


def test_json_action_mode(demo: DemoResult, memory_graph: MemoryGraph, settings: Settings) -> None:  # noqa: F811
    model = ScriptedModel(['{"tool": "search_node", "argument": "Mia mango"}', "not json",
                           '{"tool": "fetch_clip", "argument": "CLIP_0"}', '{"tool": "answer", "argument": "A mango"}'])
    trace = controller(model, memory_graph, settings, mode="tools", rounds=3).answer("What fruit does Mia like?",
                                                                                      [VIDEO])
    assert trace.answer == "A mango" and trace.outcome == "forced"
    assert [r.action for r in trace.rounds] == ["search_node", "fetch_clip", "answer"]
    schemas = [r.kwargs["json_schema"] for r in model.requests]
    assert schemas[0]["properties"]["tool"]["enum"] == ["search_clip", "search_node", "fetch_clip", "answer"]
    assert schemas[-1]["properties"]["tool"]["enum"] == ["answer"]
    assert list(trace.rounds[1].knowledge) == ["CLIP_0"]
    assert "Result of search_node" in model.requests[1].last_user


def test_native_tool_calls(demo: DemoResult, memory_graph: MemoryGraph, settings: Settings) -> None:  # noqa: F811
    model = ScriptedModel([tool_reply("search_clip", "newspaper on the table"), tool_reply("answer", "Jack", "c2")],
                          supports_tools=True)
    trace = controller(model, memory_graph, settings, mode="tools").answer("Who reads the newspaper?", [VIDEO])
    assert trace.answer == "Jack" and trace.outcome == "answered"
    second = model.requests[1].messages
    assert second[-2].role == "assistant" and second[-2].tool_calls[0].name == "search_clip"
    assert second[-1].role == "tool" and second[-1].tool_call_id == "call_1" and "newspaper" in second[-1].text
    assert {t.name for t in model.requests[0].kwargs["tools"]} == {"search_clip", "search_node", "fetch_clip",
                                                                   "answer"}


def test_tools_mode_first_round_searches_with_the_question(demo: DemoResult, memory_graph: MemoryGraph,  # noqa: F811
                                                          settings: Settings) -> None:
    model = ScriptedModel(['{"tool": "answer", "argument": "A mango"}'])
    trace = controller(model, memory_graph, settings, mode="tools", prefetch=True).answer(
        "What fruit does Mia like to eat instead of coffee?", [VIDEO])
    assert [r.action for r in trace.rounds] == ["search_clip", "answer"] and trace.outcome == "answered"
    assert trace.rounds[0].raw == [] and trace.rounds[0].usage.total_tokens == 0
    assert "Result of search_clip for the question" in model.requests[0].last_user
    assert "mango" in model.requests[0].last_user and len(model.requests) == 1


def test_empty_question_is_refused(memory_graph: MemoryGraph, settings: Settings) -> None:  # noqa: F811
    with pytest.raises(ValueError, match="empty"):
        controller(ScriptedModel([]), memory_graph, settings).answer("   ")
