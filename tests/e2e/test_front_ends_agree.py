"""The same question through every front end gives the same clips in the same order.

Front ends: the CLI (`m3graph search --json`, click's runner), the MCP server (its own tools, through the SDK's
in-process client), the controller's tool (`MemoryTools`) and the demo's search (`demo_request`). Each leg is a
function from a `Case` to the ordered clip keys that front end shows, or None where that front end cannot
express the case (the MCP tool has no time window; the demo searches one question over one video): add a leg to
`LEGS` (the explorer's HTTP search, say) and every case checks it too.

Also: every request field has a matching MCP argument and CLI option with the same bounds, or is listed here as
deliberately absent, so a new parameter reaches every front end or this file fails.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import click
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from m3graph.cli import main
from m3graph.cli.reasoning import ask as ask_command
from m3graph.embedding import text_embedder
from m3graph.errors import InvalidInputError
from m3graph.explore.app import create_app
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo, clip_key
from m3graph.ingest.demo import SCRIPT, demo_request, load_demo
from m3graph.mcp.answers import PAGE_ARGUMENTS
from m3graph.mcp.server import build_server
from m3graph.mcp.service import McpService
from m3graph.reasoning.memory_tools import MemoryTools
from m3graph.service import MemoryService
from m3graph.service import requests as rq
from tests.helpers.graph import wipe

VIDEO = "agree-demo"
DAY0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)  # clip i started on day i


def _day(i: int) -> datetime:
    return DAY0.replace(day=1 + i)


@dataclass(frozen=True)
class Case:
    query: str
    mode: str = "clip"
    since: datetime | None = None
    until: datetime | None = None
    characters: tuple[int, ...] = ()  # as an explicit option (CLI); tags in the query work everywhere


@dataclass
class World:
    graph: MemoryGraph
    embedder: Any
    people: dict[str, int]  # name -> character id
    mcp: McpService = field(init=False)

    def __post_init__(self) -> None:
        self.mcp = McpService(self.graph.settings, self.graph, embedder_factory=lambda: self.embedder)


@pytest.fixture(scope="module")
def world(memory_graph: MemoryGraph) -> Iterator[World]:
    """The demo memory with an absolute start time per clip (day i for clip i), so windows can be asked."""
    wipe(memory_graph)
    embedder = text_embedder(memory_graph.settings)
    demo = load_demo(memory_graph, embedder, VIDEO)
    clip_s = memory_graph.settings.clip_seconds
    for i in range(len(SCRIPT)):
        memory_graph.upsert_clip(ClipInfo(source_id=VIDEO, clip_index=i, start_s=i * clip_s, end_s=(i + 1) * clip_s,
                                          started_at=_day(i)), video_name="Demo: breakfast in the kitchen")
    chars = memory_graph.characters_of(list(demo.faces.values()))
    yield World(memory_graph, embedder, {name: chars[face] for name, face in demo.faces.items()})
    wipe(memory_graph)


# ---------------------------------------------------------------------------------------------- the legs


def cli_keys(w: World, case: Case) -> list[str] | None:
    args = ["search", case.query, "--video", VIDEO, "--mode", case.mode, "--json"]
    args += [a for c in case.characters for a in ("--character", str(c))]
    args += ["--since", case.since.strftime("%Y-%m-%dT%H:%M:%S")] if case.since else []
    args += ["--until", case.until.strftime("%Y-%m-%dT%H:%M:%S")] if case.until else []
    out = CliRunner().invoke(main, args, obj=w.graph.settings, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return [clip_key(c["video"], c["clip"]) for c in json.loads(out.output)["clips"]]


def mcp_keys(w: World, case: Case) -> list[str] | None:
    if case.since or case.until or case.characters:
        return None  # search_memory has no window and scopes by <character_K> tags only

    async def call() -> dict[str, Any]:
        async with Client(build_server(w.mcp)) as client:
            result = await client.call_tool("search_memory", {"query": case.query, "videos": [VIDEO],
                                                              "mode": case.mode})
            assert not result.is_error, result.content
            return result.structured_content or {}

    return [clip_key(c["video"], c["clip"]) for c in anyio.run(call)["clips"]]


def controller_keys(w: World, case: Case) -> list[str] | None:
    if case.characters:
        return None  # the controller scopes by the tags its model writes
    tools = MemoryTools(w.graph.search, w.embedder, w.graph.settings, [VIDEO], since=case.since, until=case.until)
    found = tools.search_node(case.query) if case.mode == "node" else tools.search_clip(case.query, fallback=False)
    return found.clips


def demo_keys(w: World, case: Case) -> list[str] | None:
    if case.mode != "clip" or case.since or case.until or case.characters:
        return None  # the demo asks its questions as clip searches over the demo video
    service = MemoryService(w.graph.settings, w.graph, embedder_factory=lambda: w.embedder)
    return [clip_key(c["video"], c["clip"]) for c in service.search(demo_request(case.query, VIDEO))["clips"]]


# The hook: front end -> ordered clip keys. Another front end is one more entry.
LEGS: dict[str, Callable[[World, Case], list[str] | None]] = {
    "cli": cli_keys, "mcp": mcp_keys, "controller": controller_keys, "demo": demo_keys}


def front_end_keys(w: World, case: Case) -> dict[str, list[str]]:
    answers = {name: leg(w, case) for name, leg in LEGS.items()}
    return {name: keys for name, keys in answers.items() if keys is not None}


def _agree(w: World, case: Case, at_least: int = 2) -> list[str]:
    answers = front_end_keys(w, case)
    assert len(answers) >= at_least, answers
    first = next(iter(answers.values()))
    assert all(keys == first for keys in answers.values()), answers
    assert first, f"{case}: every front end found nothing; the case tests nothing"
    return first


def _index(key: str) -> int:
    return int(key.rsplit("#", 1)[1])


# ---------------------------------------------------------------------------------------------- agreement


@pytest.mark.parametrize("question", ["What fruit does Mia like to eat?", "Where did Jack put the newspaper?",
                                      "What are the drinks for the three people?"])
def test_every_front_end_finds_the_same_clips(world: World, question: str) -> None:
    _agree(world, Case(question), at_least=4)


def test_mcp_over_stdio_agrees(world: World, tmp_path: Path) -> None:
    """The real `m3graph mcp` process, spoken to over stdio by the MCP SDK's client, as an agent runs it: the same
    clips in the same order as the other front ends, for clip and node searches."""
    s = world.graph.settings
    env = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))} | {
        "NEO4J_URI": s.bolt_uri, "M3GRAPH_NEO4J_USER": s.neo4j_user,
        "M3GRAPH_NEO4J_PASSWORD": s.neo4j_password.get_secret_value(), "M3GRAPH_DATA_DIR": str(tmp_path / "data"),
        "OMP_WAIT_POLICY": "PASSIVE", "M3GRAPH_LLM__CONTROL__BACKEND": "none", "M3GRAPH_LLM__MEMORIZE__BACKEND": "none"}
    server = StdioServerParameters(command=sys.executable, args=["-m", "m3graph.cli", "mcp"], env=env,
                                   cwd=str(tmp_path))
    cases = [Case("What fruit does Mia like to eat?"), Case("Where did Jack put the newspaper?"),
             Case("What is the name of the woman with the coffee beans?", mode="node")]

    async def ask_all() -> list[list[str]]:
        out = []
        async with stdio_client(server) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            for case in cases:
                result = await session.call_tool("search_memory", {"query": case.query, "videos": [VIDEO],
                                                                   "mode": case.mode})
                assert not result.is_error, result.content
                out.append([clip_key(c["video"], c["clip"]) for c in (result.structured_content or {})["clips"]])
        return out

    for case, keys in zip(cases, anyio.run(ask_all), strict=True):
        assert keys and keys == _agree(world, case), (case, keys)


def test_node_search_agrees(world: World) -> None:
    _agree(world, Case("What is the name of the woman with the coffee beans?", mode="node"), at_least=3)


def test_a_character_tag_scopes_every_front_end_alike(world: World) -> None:
    """A <character_K> tag scopes the search to that person (and is not a BM25 term) in every front end."""
    mia = world.people["mia"]
    scoped = _agree(world, Case(f"what does <character_{mia}> like to eat", mode="node"), at_least=3)
    mia_clips = {i for i, clip in enumerate(SCRIPT) if any("F:mia" in t or "V:mia" in t
                                                           for t in clip["episodic"] + clip["semantic"])}
    assert {_index(k) for k in scoped} <= mia_clips, scoped
    # The CLI's --character K is the same scope as the tag: the same clips (their order may differ, since the tag
    # is embedded as a neutral word, "someone", and the two query texts are not the same).
    option = cli_keys(world, Case("what does she like to eat", mode="node", characters=(mia,)))
    tagged = cli_keys(world, Case(f"what does she like to eat <character_{mia}>", mode="node"))
    assert option and set(option) == set(tagged or []) and {_index(k) for k in option} <= mia_clips


def test_a_time_window_scopes_every_front_end_alike(world: World) -> None:
    case = Case("coffee", since=_day(2), until=_day(5))  # clips 2, 3 and 4
    keys = _agree(world, case)
    assert {_index(k) for k in keys} <= {2, 3, 4}, keys
    wider = _agree(world, Case("coffee"))
    assert wider != keys or {_index(k) for k in wider} <= {2, 3, 4}


# ---------------------------------------------------------------------------------------------- one request, every door

# request -> (MCP tool, its fields deliberately without an argument)
MCP_TOOLS: dict[type[rq.Request], tuple[str, set[str]]] = {
    rq.SearchRequest: ("search_memory", {"threshold"}),  # the measured floor
    rq.FetchClipRequest: ("fetch_clip", set()),
    rq.AskRequest: ("ask", {"rounds", "mode"}),  # the server's configured controller
    rq.CharacterRequest: ("character", set()),
    rq.TimelineRequest: ("video_timeline", set()),
    rq.HistoryRequest: ("history", set()),
    rq.ListVideosRequest: ("list_videos", set()),
    rq.VoteRequest: ("vote_same", {"verdict"}),  # the tool's name is the verdict
    rq.UndoVoteRequest: ("undo_vote", set()),
    rq.CorrectFactRequest: ("correct_fact", set()),
    rq.DeleteRequest: ("delete", set()),
    rq.IngestStatusRequest: ("ingest_status", set()),
}
# request -> (CLI command path, request field -> click parameter name, fields deliberately without an option)
CLI_COMMANDS: list[tuple[type[rq.Request], tuple[str, ...], dict[str, str], set[str]]] = [
    (rq.SearchRequest, ("search",), {"videos": "videos", "k": "top_k"}, set()),
    (rq.AskRequest, ("ask",), {}, set()),
    (rq.HistoryRequest, ("history",), {}, set()),
    (rq.CorrectFactRequest, ("correct-fact",), {}, set()),
    (rq.StatsRequest, ("stats",), {"video": "source_id"}, set()),
    (rq.DeleteRequest, ("delete", "clip"), {"video": "source_id", "clip": "clip_index"}, {"kind", "char_id"}),
    (rq.DeleteRequest, ("delete", "video"), {"video": "source_id"}, {"kind", "clip", "char_id"}),
    (rq.DeleteRequest, ("delete", "character"), {}, {"kind", "video", "clip"}),
]
_SCHEMA_NOISE = {"title", "description", "default"}


def _bare(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: _bare(v) if isinstance(v, dict) else v for k, v in schema.items() if k not in _SCHEMA_NOISE}


def test_every_request_field_is_an_mcp_argument_with_the_same_schema(world: World) -> None:
    async def tools() -> dict[str, Any]:
        async with Client(build_server(world.mcp, allow_writes=True)) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    schemas = anyio.run(tools)
    for request, (tool, absent) in MCP_TOOLS.items():
        fields = request.model_json_schema().get("properties", {})
        args = schemas[tool].get("properties", {})
        paging = set(args) & set(PAGE_ARGUMENTS)  # limit / cursor: the agent front end's response budget
        assert set(fields) - absent == set(args) - paging, (tool, sorted(fields), sorted(args))
        for name in set(args) - paging:
            assert _bare(args[name]) == _bare(fields[name]), (tool, name, args[name], fields[name])
        for name in paging:  # one definition for every tool
            assert _bare(args[name]) == _bare(PAGE_ARGUMENTS[name]), (tool, name, args[name])


def test_every_request_field_is_a_cli_option() -> None:
    def command(path: tuple[str, ...]) -> click.Command:
        cmd: click.Command = main
        for name in path:
            assert isinstance(cmd, click.Group)
            cmd = cmd.commands[name]
        return cmd

    assert command(("ask",)) is ask_command
    for request, path, names, absent in CLI_COMMANDS:
        params = {p.name for p in command(path).params}
        for name in set(request.model_fields) - absent:
            assert names.get(name, name) in params, (path, name, sorted(params))


def test_the_controller_refuses_an_unknown_tool(world: World) -> None:
    """It used to run search_clip for any name it did not know."""
    tools = MemoryTools(world.graph.search, world.embedder, world.graph.settings, [VIDEO])
    with pytest.raises(InvalidInputError, match="unknown memory tool 'search_everything'"):
        tools.run("search_everything", "coffee")
    assert tools.run("search_clip", "coffee").clips == _agree(world, Case("coffee"))


# -- the explorer leg: its HTTP search page, read as an analyst's browser gets it --------------------------------
TOKEN = "explorer-agrees-token"
_RESULT = re.compile(r'<div class="result" data-clip="([^"]+)">\s*<h3>.*?relevance (-?[0-9.]+)', re.S)


def _local(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S") if when else ""  # the form's datetime-local value (UTC)


def explorer_results(w: World, case: Case) -> list[tuple[str, float]]:
    """(clip key, shown relevance) in the order the explorer's search page lists them."""
    service = MemoryService(w.graph.settings, w.graph, embedder_factory=lambda: w.embedder)
    app = create_app(service, TOKEN, hosts=["testserver"])
    query = case.query + "".join(f" <character_{c}>" for c in case.characters)
    with TestClient(app) as client:
        client.cookies.set("m3graph_explore", TOKEN)
        page = client.get("/search", params={"q": query, "video": VIDEO, "mode": case.mode,
                                             "since": _local(case.since), "until": _local(case.until)})
    assert page.status_code == 200, page.text
    return [(key, float(score)) for key, score in _RESULT.findall(page.text)]


def _cases(w: World) -> list[Case]:
    mia = w.people["mia"]
    return [Case("What fruit does Mia like to eat?"), Case("Where did Jack put the newspaper?"),
            Case("What are the drinks for the three people?"),
            Case("What is the name of the woman with the coffee beans?", mode="node"),
            Case(f"what does <character_{mia}> like to eat", mode="node"),
            Case("coffee", since=_day(2), until=_day(5))]


@pytest.mark.parametrize("which", range(6))
def test_the_explorer_shows_the_same_clips_best_first(world: World, which: int) -> None:
    case = _cases(world)[which]
    others = front_end_keys(world, case)
    assert len(others) >= 2, others
    agreed = next(iter(others.values()))
    assert all(keys == agreed for keys in others.values()), others
    assert agreed, f"{case}: no front end found anything; the case tests nothing"
    shown = explorer_results(world, case)
    keys, scores = [k for k, _ in shown], [s for _, s in shown]
    assert keys == agreed, (keys, agreed)  # the same clips in the same order
    assert scores == sorted(scores, reverse=True), shown  # and that order is best first
