"""`m3graph mcp` driven by the MCP SDK's own client, over stdio and over streamable HTTP, against the real Neo4j
holding the demo memory.

The server is the installed entry point in a subprocess, configured only through its environment (connection
settings and the password never appear on a command line). The chat model behind `ask` is a scripted
OpenAI-compatible endpoint in this process (the model is not what is tested here; the database always is).
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import requests
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.demo import load_demo
from m3graph.settings import Settings
from tests.helpers.graph import wipe
from tests.helpers.media import make_video

VIDEO = "demo-mcp"
READ_TOOLS = {"search_memory", "fetch_clip", "character", "list_videos", "video_timeline", "history", "ask",
              "graph_schema", "read_cypher", "fetch_media", "file_text", "ask_status"}
WRITE_TOOLS = {"remember", "ingest_chat", "ingest", "ingest_status", "vote_same", "vote_different", "undo_vote",
               "correct_fact", "delete"}
TOKEN = "test-token-0123456789abcdef"
ENTRY = [sys.executable, "-m", "m3graph.cli"]
SCRIPTED_ANSWER = {"answer": "mangoes", "next_query": None}
# The basis probe (issue 37): with a unit basis vector, score = (1 + cos) / 2 is one coordinate of a stored vector.
PROBE = ("CALL db.index.vector.queryNodes($index, 1000, $v) YIELD node, score "
         "RETURN node.memory_id AS id, node.entity_id AS entity, score")


# ---------------------------------------------------------------------------------------------- fixtures


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def demo(memory_graph: MemoryGraph) -> Iterator[MemoryGraph]:
    wipe(memory_graph)
    load_demo(memory_graph, text_embedder(memory_graph.settings), VIDEO)
    yield memory_graph
    wipe(memory_graph)


@pytest.fixture(scope="module")
def chat_model() -> Iterator[str]:
    """A scripted OpenAI-compatible /chat/completions endpoint: always the same reader reply."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps({"model": "scripted", "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": json.dumps(SCRIPTED_ANSWER)}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcp-work")
    (root / "notes.mp4").write_text("a shopping list, not a video\n", encoding="utf-8")
    (root / "standup.txt").write_text("--- 2024-05-01T09:00:00Z\nAnn: The build is green.\nBob: I will ship the "
                                      "release on Friday.\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def env(demo: MemoryGraph, chat_model: str, workdir: Path) -> dict[str, str]:
    s = demo.settings
    base = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))}
    return base | {
        "NEO4J_URI": s.bolt_uri, "M3GRAPH_NEO4J_USER": s.neo4j_user,
        "M3GRAPH_NEO4J_PASSWORD": s.neo4j_password.get_secret_value(),
        "M3GRAPH_DATA_DIR": str(workdir / "data"), "OMP_WAIT_POLICY": "PASSIVE",
        "M3GRAPH_IDENTITY__FACE_THRESHOLD": "0.3", "M3GRAPH_IDENTITY__VOICE_THRESHOLD": "0.6",
        "M3GRAPH_LLM__CONTROL__BACKEND": "openai", "M3GRAPH_LLM__CONTROL__BASE_URL": chat_model,
        "M3GRAPH_LLM__CONTROL__MODEL": "scripted", "M3GRAPH_LLM__CONTROL__MAX_RETRIES": "0",
        "M3GRAPH_LLM__MEMORIZE__BACKEND": "none",
    }


# ---------------------------------------------------------------------------------------------- helpers


def _floats_longer_than_32(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_floats_longer_than_32(v) for v in value.values())
    if isinstance(value, list):
        if len(value) > 32 and all(isinstance(x, float) for x in value):
            return True
        return any(_floats_longer_than_32(v) for v in value)
    return False


class Calls:
    """Tool calls on one client session; every result is checked for embeddings."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def ok(self, tool: str, /, **args: Any) -> dict[str, Any]:
        result = await self.session.call_tool(tool, args)
        text = "".join(c.text for c in result.content if c.type == "text")
        assert not result.is_error, f"{tool}({args}) failed: {text}"
        data = result.structured_content
        assert data is not None and json.loads(text) == data  # the text content is the same JSON
        assert not _floats_longer_than_32(data), f"{tool} returned a vector"
        assert "floats omitted" not in text or tool == "read_cypher"
        return data

    async def error(self, tool: str, /, **args: Any) -> str:
        result = await self.session.call_tool(tool, args)
        assert result.is_error, f"{tool}({args}) should have failed"
        [content] = result.content
        assert content.type == "text" and "\n" not in content.text.strip() and "Traceback" not in content.text
        return content.text


def _stdio(env: dict[str, str], cwd: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=ENTRY[0], args=[*ENTRY[1:], "mcp", *args], env=env, cwd=str(cwd))


def _all_text(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False)


async def _basis_probes_are_refused(call: Calls, settings: Settings) -> None:
    """The two vector indexes the demo fills (memories, faces), probed with a basis vector of each dimension: an
    error result naming the oracle, never rows of scores."""
    for index, dim in (("memory_embedding", settings.memory.text_dim),
                       ("face_centroid", settings.identity.face_dim)):
        basis = [1.0] + [0.0] * (dim - 1)
        refusal = await call.error("read_cypher", query=PROBE, params={"index": index, "v": basis})
        assert refusal.startswith("cypher refused (vector)") and "queryNodes" in refusal, refusal


# ---------------------------------------------------------------------------------------------- stdio


def test_stdio_read_only_serves_the_read_tools_on_the_demo_memory(env: dict[str, str], workdir: Path,
                                                                   demo: MemoryGraph) -> None:
    settings = demo.settings

    async def run() -> None:
        async with stdio_client(_stdio(env, workdir)) as (r, w), ClientSession(r, w) as session:
            init = await session.initialize()
            assert init.server_info.name == "m3graph" and init.instructions
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == READ_TOOLS  # read-only (the default) hides every write tool
            for t in tools.values():
                assert t.annotations and t.annotations.read_only_hint and not t.annotations.destructive_hint
                assert t.input_schema["type"] == "object" and len(t.description or "") > 80
                assert "\n" not in (t.description or "")  # one paragraph
            assert tools["search_memory"].input_schema["properties"]["mode"]["enum"] == ["clip", "node"]
            assert tools["search_memory"].input_schema["required"] == ["query"]
            call = Calls(session)

            videos = await call.ok("list_videos")
            [demo] = [v for v in videos["videos"] if v["source_id"] == VIDEO]
            assert demo["clips"] >= 3 and demo["memories"] > 0

            timeline = await call.ok("video_timeline", video=VIDEO)
            assert [c["clip"] for c in timeline["clips"]] == list(range(len(timeline["clips"])))
            assert all(c["summary"] for c in timeline["clips"])
            assert "<character_" in _all_text(timeline) and "<face_" not in _all_text(timeline)

            hits = await call.ok("search_memory", query="What fruit does Mia like to eat?", videos=[VIDEO])
            assert hits["clips"] and "mango" in _all_text(hits).lower()
            assert all(c["video"] == VIDEO for c in hits["clips"])
            assert "<character_" in _all_text(hits) and "<face_" not in _all_text(hits)
            early = await call.ok("search_memory", query="mango", videos=[VIDEO], before_clip=0, mode="node", k=5)
            assert all(c["clip"] <= 0 for c in early["clips"])

            clip = hits["clips"][0]["clip"]
            fetched = await call.ok("fetch_clip", video=VIDEO, clip=clip, before=1, after=1)
            assert fetched["clip"] == clip and fetched["faces"]
            assert clip in [c["clip"] for c in fetched["clips"]] and len(fetched["clips"]) >= 2

            mia = await call.ok("character", name="Mia", videos=[VIDEO])
            assert mia["faces"] and mia["voices"] and any("Mia" in f for f in mia["facts"])
            assert mia["same_as"] and mia["same_as"][0]["evidence_clips"]
            assert VIDEO in mia["appearances"]
            again = await call.ok("character", char_id=mia["char_id"])
            assert again["faces"] == mia["faces"]

            schema = await call.ok("graph_schema")
            labels = {n["label"] for n in schema["nodes"]}
            assert {"Video", "Clip", "Memory", "Face", "Voice", "Character", "Speaker", "Thing"} <= labels
            assert {"SAME_AS", "SUPERSEDES", "CONTRADICTS"} <= {r["type"] for r in schema["relationships"]}
            assert any(i["name"] == "memory_embedding" for i in schema["indexes"]) and schema["counts"]["Memory"]

            rows = await call.ok("read_cypher", query="MATCH (m:Memory {video_id: $v}) RETURN m LIMIT 3",
                                 params={"v": VIDEO})
            assert rows["columns"] == ["m"] and len(rows["rows"]) == 3
            assert all(r["m"]["text"] and "embedding" not in r["m"] for r in rows["rows"])
            assert "vector" in await call.error("read_cypher", query="MATCH (m:Memory) RETURN m.embedding LIMIT 1")
            capped = await call.ok("read_cypher", query="UNWIND range(1, 5000) AS i RETURN i")
            assert capped["truncated"] and capped["row_count"] == 1000
            await _basis_probes_are_refused(call, settings)

            answer = await call.ok("ask", question="What fruit does Mia like to eat?", videos=[VIDEO])
            assert answer["answer"] == "mangoes" and answer["outcome"] == "answered"
            assert answer["rounds"] and "mango" in _all_text(answer["evidence"]).lower()

            # errors: one line each, as tool error results
            assert "no source" in await call.error("video_timeline", video="no-such-video")
            assert "no clip 99" in await call.error("fetch_clip", video=VIDEO, clip=99)
            assert "write" in await call.error("read_cypher", query="CREATE (n:Evil) RETURN n")
            assert "operator" in await call.error("read_cypher", query="LOAD CSV FROM 'file:///etc/passwd' AS l "
                                                                        "RETURN l")
            assert "invalid argument k" in await call.error("search_memory", query="mango", k=0)
            assert "invalid argument" in await call.error("fetch_clip", video=VIDEO)
            assert "exactly one" in await call.error("character")
            assert "remember" in await call.error("remember", text="hidden in read-only mode")

    anyio.run(run)


def test_stdio_allow_writes_adds_the_write_tools(env: dict[str, str], workdir: Path, demo: MemoryGraph) -> None:
    async def run() -> None:
        async with stdio_client(_stdio(env, workdir, "--allow-writes")) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == READ_TOOLS | WRITE_TOOLS
            assert tools["delete"].annotations.destructive_hint and not tools["delete"].annotations.read_only_hint
            assert not tools["remember"].annotations.read_only_hint
            call = Calls(session)

            note = await call.ok("remember", text="The spare key is under the blue flowerpot.", speaker="Lily")
            assert note["source"] == "agent-notes" and note["clip"] == 0
            assert note["speaker"] == "Lily (agent)" and note["agent_note"]  # an agent's note (test_agent_notes.py)
            found = await call.ok("search_memory", query="where is the spare key", videos=["agent-notes"])
            assert "flowerpot" in _all_text(found)

            chat = await call.ok("ingest_chat", path="standup.txt", source_id="standup")
            assert chat["sessions_written"] == [0] and chat["turns"] == 2
            assert "ship the release" in _all_text(await call.ok("fetch_clip", video="standup", clip=0))
            assert "outside the directories" in await call.error("ingest_chat", path="/etc/passwd")

            mia = await call.ok("character", name="Mia", videos=[VIDEO])
            face, voice = mia["faces"][0], mia["voices"][0]
            apart = await call.ok("vote_different", a=face, b=voice, note="test")
            assert apart["vote"]["source"] == "manual" and apart["vote"]["verdict"] == "different"
            assert apart["characters"][str(face)] != apart["characters"][str(voice)]
            await call.ok("undo_vote", vote_id=apart["vote"]["vote_id"])
            together = await call.ok("vote_same", a=face, b=voice)
            assert together["characters"][str(face)] == together["characters"][str(voice)]
            assert "not a face, voice or speaker" in await call.error("vote_same", a=face, b=999999)

            assert (await call.ok("ingest_status"))["jobs"] == []
            assert "no such file" in await call.error("ingest", paths=["missing.mp4"])
            job = await call.ok("ingest", paths=["notes.mp4"])  # not a video: the job fails, the server goes on
            assert job["state"] == "running" and job["job_id"]
            deadline = time.monotonic() + 120
            while (status := await call.ok("ingest_status", job_id=job["job_id"]))["state"] == "running":
                assert time.monotonic() < deadline, status
                await anyio.sleep(0.5)
            assert status["state"] == "failed" and "notes" in status["error"] and "\n" not in status["error"]
            assert any("FAILED" in line for line in status["log"])
            assert "no ingest job" in await call.error("ingest_status", job_id="ingest-99")

            gone = await call.ok("delete", kind="clip", video="agent-notes", clip=0)
            assert gone["deleted"] == "clip"
            assert "no clip 0" in await call.error("fetch_clip", video="agent-notes", clip=0)
            assert "needs char_id" in await call.error("delete", kind="character")

    anyio.run(run)
    assert not demo.ex.read("explore/video_clips", source_id="agent-notes")


def test_ingest_job_runs_a_video_to_done(env: dict[str, str], workdir: Path, demo: MemoryGraph) -> None:
    """The write tool an agent uses to add a video: the job runs the real pipeline (cut, perception, the perception
    memorizer) into the graph, its status follows it to "done", and the clip is then readable through the tools."""
    make_video(workdir / "pattern.mp4", 8)  # no face, no speech: the scene description gives it memories

    async def run() -> None:
        async with stdio_client(_stdio(env, workdir, "--allow-writes")) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            call = Calls(session)
            job = await call.ok("ingest", paths=["pattern.mp4"], source_id="mcp-pattern")
            assert job["state"] == "running" and job["source_id"] == "mcp-pattern"
            deadline = time.monotonic() + 300
            while (status := await call.ok("ingest_status", job_id=job["job_id"]))["state"] == "running":
                assert time.monotonic() < deadline, status
                await anyio.sleep(0.5)
            assert status["state"] == "done" and status["error"] is None, status
            assert status["videos"]["mcp-pattern"]["clip"] == 1 and status["videos"]["mcp-pattern"]["clips"] == 1
            assert status["log"], status
            listed = await call.ok("ingest_status")
            assert [j["job_id"] for j in listed["jobs"]] == [job["job_id"]]

            videos = _all_text(await call.ok("list_videos"))
            assert "mcp-pattern" in videos
            clip = await call.ok("fetch_clip", video="mcp-pattern", clip=0)
            assert "scene" in _all_text(clip).lower(), clip

    anyio.run(run)
    states = demo.ex.read("explore/video_clips", source_id="mcp-pattern")
    assert [row["state"] for row in states] == ["memorized"] and states[0]["memories"] > 0, states


# ---------------------------------------------------------------------------------------------- HTTP


@pytest.fixture(scope="module")
def http_server(env: dict[str, str], workdir: Path) -> Iterator[str]:
    port = _free_port()
    log = (workdir / "http.log").open("w")
    proc = subprocess.Popen([*ENTRY, "mcp", "--http", f"127.0.0.1:{port}"], env=env | {"M3GRAPH_MCP_TOKEN": TOKEN},
                            cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, (workdir / "http.log").read_text()
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert time.monotonic() < deadline, "the HTTP server did not start"
        time.sleep(0.3)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_http_needs_the_token_and_a_local_origin(http_server: str) -> None:
    assert requests.post(http_server, json=_INIT, headers=_HEADERS, timeout=30).status_code == 401
    wrong = {**_HEADERS, "Authorization": "Bearer not-the-token-at-all"}
    assert requests.post(http_server, json=_INIT, headers=wrong, timeout=30).status_code == 401
    good = {**_HEADERS, "Authorization": f"Bearer {TOKEN}"}
    page = requests.post(http_server, json=_INIT, headers={**good, "Origin": "http://evil.example"}, timeout=30)
    assert page.status_code == 403 and "Origin" in page.text
    rebound = requests.post(http_server, json=_INIT, headers={**good, "Host": "evil.example"}, timeout=30)
    assert rebound.status_code == 421
    local = requests.post(http_server, json=_INIT, headers={**good, "Origin": http_server.removesuffix("/mcp")},
                          timeout=30)
    assert local.status_code == 200


def test_http_client_session_calls_tools(http_server: str, demo: MemoryGraph) -> None:
    settings = demo.settings

    async def run() -> None:
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"},
                                    timeout=httpx2.Timeout(30, read=300))
        async with client, streamable_http_client(http_server, http_client=client) as (r, w), \
                ClientSession(r, w) as session:
            await session.initialize()
            assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS
            call = Calls(session)
            hits = await call.ok("search_memory", query="Where is the newspaper?", videos=[VIDEO], mode="node")
            assert hits["clips"]
            assert "no source" in await call.error("video_timeline", video="nope")
            await _basis_probes_are_refused(call, settings)

    anyio.run(run)


def test_http_without_a_configured_token_generates_one(env: dict[str, str], workdir: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen([*ENTRY, "mcp", "--http", f"127.0.0.1:{port}"], env=env, cwd=workdir,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        token = None
        assert proc.stderr is not None
        for line in proc.stderr:  # printed before the server listens
            if line.startswith("bearer token for this launch"):
                token = line.rsplit(" ", 1)[1].strip()
                break
        assert token and len(token) >= 32
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.3)
        url = f"http://127.0.0.1:{port}/mcp"
        assert requests.post(url, json=_INIT, headers=_HEADERS, timeout=30).status_code == 401
        authorized = {**_HEADERS, "Authorization": f"Bearer {token}"}
        assert requests.post(url, json=_INIT, headers=authorized, timeout=30).status_code == 200
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_token_on_the_command_line_is_refused(env: dict[str, str], workdir: Path) -> None:
    # The token is a setting (settings.mcp_token: M3GRAPH_MCP_TOKEN or the config file); no option takes it.
    out = subprocess.run([*ENTRY, "mcp", "--http", "127.0.0.1:1", "--token", TOKEN], env=env, cwd=workdir,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "No such option '--token'" in out.stderr
    remote = subprocess.run([*ENTRY, "mcp", "--http", "0.0.0.0:1"], env=env, cwd=workdir, capture_output=True,
                            text=True, timeout=120)
    assert remote.returncode == 2 and "--allow-remote" in remote.stderr
