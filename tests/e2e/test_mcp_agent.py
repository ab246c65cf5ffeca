"""The MCP tools as an agent uses them: small answers, hits it can cite, pages it can follow, and an `ask` that
outlives a client's 60 s request timeout. Against the real Neo4j, through the SDK's client (in process, and the
real `m3graph mcp` process over stdio for the cite-and-correct loop).

The memory: the demo video (people with name facts) and a dated LoCoMo-style conversation of ten sessions
between Melanie and Caroline, long enough that a person's episodes and a schema overflow the response budget.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.demo import load_demo
from m3graph.mcp.answers import BUDGET, compact
from m3graph.mcp.server import build_server
from m3graph.mcp.service import McpService
from tests.helpers.graph import wipe
from tests.helpers.locomo import locomo_conversation

VIDEO = "agent-demo"
CHAT = "agent-chat"
TOPICS = ["pottery class", "camping trip", "the new puppy", "a painting of a sunset", "the charity run",
          "her kids' school play", "a book about self-care", "the beach in summer", "a guitar lesson",
          "the adoption agency"]


def _sessions() -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for n, topic in enumerate(TOPICS, start=1):
        turns = []
        for t in range(12):
            speaker = "Melanie" if t % 2 == 0 else "Caroline"
            turns.append({"speaker": speaker, "dia_id": f"D{n}:{t + 1}",
                          "text": f"{'I' if t % 2 == 0 else 'You'} talked about {topic} again today, and it made "
                                  f"me think of what we planned for next week (line {t + 1})."})
        out[n] = turns
    return out


@pytest.fixture(scope="module")
def world(memory_graph: MemoryGraph, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpService]:
    wipe(memory_graph)
    embedder = text_embedder(memory_graph.settings)
    load_demo(memory_graph, embedder, VIDEO)
    conv = locomo_conversation(tmp_path_factory.mktemp("agent-chat"), CHAT, _sessions(), ("Melanie", "Caroline"))
    ingest_conversation(memory_graph, conv, embedder)
    yield McpService(memory_graph.settings, memory_graph, embedder_factory=lambda: embedder)
    wipe(memory_graph)


async def _call(svc: McpService, tool: str, writes: bool = False, **args: Any) -> tuple[str, dict[str, Any]]:
    async with Client(build_server(svc, allow_writes=writes)) as client:
        result = await client.call_tool(tool, args)
        text = "".join(c.text for c in result.content if c.type == "text")
        assert not result.is_error, f"{tool}({args}): {text}"
        data = result.structured_content or {}
        assert text == compact(data), f"{tool}: the text is not the compact JSON of the structured content"
        return text, data


def call(svc: McpService, tool: str, writes: bool = False, **args: Any) -> tuple[str, dict[str, Any]]:
    return anyio.run(lambda: _call(svc, tool, writes, **args))


def error(svc: McpService, tool: str, **args: Any) -> str:
    async def run() -> str:
        async with Client(build_server(svc)) as client:
            result = await client.call_tool(tool, args)
            assert result.is_error, f"{tool}({args}) should have failed"
            return "".join(c.text for c in result.content if c.type == "text")

    return anyio.run(run)


def _melanie(svc: McpService) -> int:
    _, found = call(svc, "character", name="Melanie")
    return int(found["char_id"])


def test_response_sizes(world: McpService, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The characters each tool's answer takes (its text content), written to sizes.json for docs/mcp.md."""
    melanie, person = call(world, "character", char_id=_melanie(world))
    page = person.get("page", {})
    sizes: dict[str, int | str] = {
        "search_memory clip": len(call(world, "search_memory", query="What fruit does Mia like to eat?")[0]),
        "search_memory node k=20": len(call(world, "search_memory", query="pottery class", mode="node", k=20)[0]),
        "character Melanie": len(melanie),
        "character Melanie episodes": f"{page.get('returned', len(person['episodes']))} of "
                                      f"{page.get('total', len(person['episodes']))}",
        "character Mia": len(call(world, "character", name="Mia")[0]),
        "graph_schema": len(call(world, "graph_schema")[0]),
        "video_timeline chat": len(call(world, "video_timeline", video=CHAT)[0]),
    }
    out = Path(os.environ.get("M3GRAPH_SIZES_OUT") or tmp_path_factory.getbasetemp() / "sizes.json")
    out.write_text(json.dumps(sizes, indent=1), encoding="utf-8")
    print(json.dumps(sizes), file=sys.stderr)


# ---------------------------------------------------------------------------------------------- citing


def test_every_hit_carries_what_cites_it(world: McpService) -> None:
    """Conversation hits: memory id, clip key, date, turn id and the speaker by name; video hits: the person
    named where a name fact knows them."""
    _, chat = call(world, "search_memory", query="pottery class", videos=[CHAT], mode="node", k=5)
    assert chat["clips"]
    for clip in chat["clips"]:
        assert clip["clip_key"] == f"{CHAT}#{clip['clip']}" and clip["started_at"].startswith("2023-05-")
        for m in clip["memories"]:
            assert m["memory_id"] and m["turn_id"].startswith(f"D{clip['clip'] + 1}:"), m
            assert any(n.startswith(("Melanie (character_", "Caroline (character_")) for n in m["names"]), m
    _, video = call(world, "search_memory", query="What fruit does Mia like to eat?", videos=[VIDEO])
    memories = [m for c in video["clips"] for m in c["memories"]]
    assert all(m["memory_id"] and "turn_id" not in m for m in memories)  # a video has no turns
    assert any(n.startswith("Mia (character_") for m in memories for n in m.get("names", ())), memories
    _, clip = call(world, "fetch_clip", video=CHAT, clip=0)
    shown = [m for c in clip["clips"] for m in c["memories"]]
    said = [m for m in shown if "'s name is " not in m["text"]]  # turns; a speaker's name fact cites no turn
    assert said and all(m["turn_id"] and m["names"] for m in said)
    assert all(m["names"] and "turn_id" not in m for m in shown if m not in said)


# ---------------------------------------------------------------------------------------------- paging


def test_a_long_list_comes_in_pages_within_the_budget(world: McpService) -> None:
    melanie = _melanie(world)
    text, first = call(world, "character", char_id=melanie)
    assert len(text) <= BUDGET and first["page"]["items"] == "episodes" and first["page"]["offset"] == 0
    assert "call again with cursor=" in first["page"]["truncated"]
    seen = [e["memory_id"] for e in first["episodes"]]
    cursor = first["page"].get("next_cursor")
    while cursor:
        text, page = call(world, "character", char_id=melanie, cursor=cursor)
        assert len(text) <= BUDGET and page["page"]["offset"] == int(cursor)
        seen += [e["memory_id"] for e in page["episodes"]]
        cursor = page["page"].get("next_cursor")
    assert len(seen) == len(set(seen)) == first["page"]["total"]  # every episode once, none twice

    _, three = call(world, "character", char_id=melanie, limit=3)
    assert len(three["episodes"]) == 3 and three["page"]["next_cursor"] == "3"
    assert "limit 3" in three["page"]["truncated"]
    _, everything = call(world, "list_videos")
    assert "page" not in everything  # nothing left out: no page
    _, one = call(world, "list_videos", limit=1)
    assert len(one["videos"]) == 1 and one["page"]["total"] == 2
    _, rest = call(world, "list_videos", cursor=one["page"]["next_cursor"])
    assert {v["source_id"] for v in one["videos"] + rest["videos"]} == {VIDEO, CHAT}
    _, clips = call(world, "video_timeline", video=CHAT, limit=4, cursor="8")
    assert [c["clip"] for c in clips["clips"]] == [8, 9] and "next_cursor" not in clips["page"]
    assert "past the end" in error(world, "character", char_id=melanie, cursor="9999")
    assert "invalid argument cursor" in error(world, "list_videos", cursor="abc")


def test_the_schema_is_compact(world: McpService) -> None:
    text, schema = call(world, "graph_schema")
    assert len(text) < 13000 and "\n" not in text
    assert all(i["on"] and "(" in i["on"] for i in schema["indexes"])
    assert not {i["name"] for i in schema["indexes"]} & {c["name"] for c in schema["constraints"]}


# ---------------------------------------------------------------------------------------------- ask


class _Trace:
    def __init__(self, question: str) -> None:
        self.question = question

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "answer": "pottery", "outcome": "answered", "rounds": [],
                "evidence": {}}


class _SlowController:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def answer(self, question: str, videos: list[str] | None, before_clip: int | None) -> _Trace:
        time.sleep(self.seconds)
        return _Trace(question)


def test_a_slow_answer_reports_progress_and_is_polled(world: McpService) -> None:
    """A model slower than the wait: ask sends progress, hands back a job, and ask_status returns the answer."""
    svc = McpService(world.settings, world.graph, embedder_factory=lambda: world.embedder,
                     controller_factory=lambda *_: _SlowController(3.0))
    svc.ask_wait_s = 1.0
    reports: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, message))

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(build_server(svc)) as client:
            started = await client.call_tool("ask", {"question": "What does Melanie do?"},
                                             progress_callback=on_progress)
            assert not started.is_error, started.content
            status = started.structured_content or {}
            assert status["state"] == "running" and "ask_status" in status["next"], status
            deadline = time.monotonic() + 120
            while True:  # each poll waits ask_wait_s at most, then says "running" again
                polled = await client.call_tool("ask_status", {"job_id": status["job_id"]})
                assert not polled.is_error, polled.content
                answer = polled.structured_content or {}
                if answer.get("state") != "running":
                    return status, answer
                assert time.monotonic() < deadline, answer

    status, answer = anyio.run(run)
    assert answer["answer"] == "pottery" and answer["outcome"] == "answered"
    assert reports and reports[0][1] and reports[0][1].startswith("answering")
    assert "no ask job" in error(svc, "ask_status", job_id="ask-99")


# ---------------------------------------------------------------------------------------------- the agent loop


def test_an_agent_cites_a_hit_and_corrects_it_by_its_id(world: McpService, tmp_path: Path) -> None:
    """Through the real `m3graph mcp --allow-writes` process over stdio: search, take a hit's memory_id, correct
    that fact by the id, see the correction in the next search (and the name it gave gone), then undo it."""
    s = world.settings
    env = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))} | {
        "NEO4J_URI": s.bolt_uri, "M3GRAPH_NEO4J_USER": s.neo4j_user,
        "M3GRAPH_NEO4J_PASSWORD": s.neo4j_password.get_secret_value(), "M3GRAPH_DATA_DIR": str(tmp_path / "data"),
        "OMP_WAIT_POLICY": "PASSIVE", "M3GRAPH_LLM__CONTROL__BACKEND": "none", "M3GRAPH_LLM__MEMORIZE__BACKEND": "none"}
    server = StdioServerParameters(command=sys.executable, args=["-m", "m3graph.cli", "mcp", "--allow-writes"],
                                   env=env, cwd=str(tmp_path))
    question = {"query": "What is the name of the woman with the coffee beans?", "videos": [VIDEO], "mode": "node"}

    async def ok(session: ClientSession, tool: str, **args: Any) -> dict[str, Any]:
        result = await session.call_tool(tool, args)
        assert not result.is_error, (tool, result.content)
        return result.structured_content or {}

    async def loop() -> None:
        async with stdio_client(server) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            found = await ok(session, "search_memory", **question)
            hits = [m for c in found["clips"] for m in c["memories"]]
            cited = next(m for m in hits if m["kind"] == "semantic" and "'s name is Mia" in m["text"])
            assert any(n.startswith("Mia (character_") for n in cited["names"]), cited

            fixed = await ok(session, "correct_fact", memory_id=cited["memory_id"], state="superseded",
                             note="the agent was told otherwise")
            assert fixed["memory_id"] == cited["memory_id"] and fixed["changed"] and not fixed["current"]
            again = await ok(session, "search_memory", **question, all_versions=True)
            [shown] = [m for c in again["clips"] for m in c["memories"] if m["memory_id"] == cited["memory_id"]]
            assert shown.get("superseded"), shown  # the corrected version says it no longer holds
            person = cited["names"][0].split("(")[1].rstrip(")")
            assert f"Mia ({person})" not in compact(again)  # nor does it name her any more

            undone = await ok(session, "correct_fact", memory_id=cited["memory_id"], state="clear")
            assert undone["changed"] and undone["current"]
            restored = await ok(session, "search_memory", **question)
            assert f"Mia ({person})" in compact(restored)

    anyio.run(loop)
