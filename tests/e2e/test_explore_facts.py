"""Facts that change in the explorer, over the real Neo4j through its HTTP pages (FastAPI's test client): the
search page's as_of and every-version views, a character's fact history, and the correction buttons (CSRF and
same-origin rules as for votes); and the same correction through the MCP write tool `correct_fact`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from m3graph.explore.app import create_app
from m3graph.explore.security import csrf_for
from m3graph.graphdb.store import MemoryGraph
from m3graph.mcp.server import build_server
from m3graph.mcp.service import McpService
from m3graph.service import MemoryService
from tests.graph.test_fact_versions import VIDEO, Vectors
from tests.helpers.graph import add_clip, canonical_dump, face_dim, mem, new_face, rng, rows, unit

TOKEN = "explorer-facts-token"
ORIGIN = {"Origin": "http://testserver"}


@dataclass
class World:
    client: TestClient
    char: int
    texts: dict[str, str]  # value -> memory text


@pytest.fixture
def world(graph: MemoryGraph) -> Iterator[World]:
    """One person (a face) whose favourite fruit changes twice, and one HTML-looking value (escaped on pages)."""
    gen = rng(11)
    for i in range(5):
        add_clip(graph, VIDEO, i)
    face = new_face(graph, VIDEO, 0, unit(face_dim(graph), gen), gen)
    vec = Vectors(graph)
    texts = {v: f"<face_{face}>'s favourite fruit is {v}." for v in ("mango", "apple", "pear")}
    texts["<i>Paris</i>"] = f"<face_{face}> lives in <i>Paris</i>."
    for clip, value in ((0, "mango"), (2, "apple"), (3, "pear"), (4, "<i>Paris</i>")):
        graph.write_memories(VIDEO, clip, [mem("semantic", texts[value], vec(texts[value]))])
    service = MemoryService(graph.settings, graph, embedder_factory=lambda: None)
    service.embed = lambda text: vec.base.tolist()  # type: ignore[method-assign]  # no text model needed
    app = create_app(service, TOKEN, hosts=["testserver"])
    with TestClient(app) as client:
        client.cookies.set("m3graph_explore", TOKEN)
        yield World(client, graph.characters_of([face])[face], texts)


def _search(w: World, **params: str) -> str:
    page = w.client.get("/search", params={"q": "favourite fruit", "video": VIDEO, "mode": "node", **params})
    assert page.status_code == 200, page.text
    return page.text


def _fruits(html: str) -> list[str]:
    plain = re.sub(r"</?mark>", "", html)  # the search page marks the query's words
    return sorted(re.findall(r"favourite fruit is (\w+)\.", plain))


def test_search_as_of_and_every_version_mark_superseded_facts(world: World) -> None:
    assert _fruits(_search(world)) == ["pear"]
    assert _fruits(_search(world, as_of=f"{VIDEO}#0")) == ["mango"]
    assert _fruits(_search(world, as_of=f"{VIDEO}#2")) == ["apple"]
    every = _search(world, all_versions="1")
    assert _fruits(every) == ["apple", "mango", "pear"]
    assert every.count('class="badge superseded">superseded on CLIP_2<') == 1  # the mango
    assert every.count('class="badge superseded">superseded on CLIP_3<') == 1  # the apple
    assert 'name="all_versions" value="1" checked' in every
    for bad in ("next tuesday", f"{VIDEO}#x", "2023-13-45"):
        page = world.client.get("/search", params={"q": "fruit", "as_of": bad})
        assert page.status_code == 400 and "as_of" in page.text, (bad, page.status_code)
    assert world.client.get("/search", params={"q": "fruit", "all_versions": "maybe"}).status_code == 400


def test_the_character_page_lists_each_slot_s_history_escaped(world: World) -> None:
    page = world.client.get(f"/character/{world.char}")
    assert page.status_code == 200, page.text
    section = page.text.split('id="fact-history"')[1].split("</section>")[0]
    rows_ = re.findall(r'<tr class="version( superseded)?" data-memory="[^"]+">\s*<td>[^<]*</td>\s*<td>([^<]*)</td>',
                       section)
    assert [(v, bool(s)) for s, v in rows_] == [("mango", True), ("apple", True), ("pear", False),
                                                ("&lt;i&gt;Paris&lt;/i&gt;", False)]
    assert "superseded on CLIP_2" in section and "superseded on CLIP_3" in section
    assert "<i>Paris" not in section  # untrusted text stays text


def test_a_fact_is_superseded_restored_and_cleared_from_the_explorer(world: World, graph: MemoryGraph) -> None:
    pear = rows(graph, "MATCH (m:Memory {text: $t}) RETURN m.memory_id AS id", t=world.texts["pear"])[0]["id"]
    form = {"csrf": csrf_for(TOKEN), "memory_id": pear, "state": "superseded", "note": "misheard",
            "next": f"/character/{world.char}"}
    before = canonical_dump(graph)
    for refused in ({**form, "csrf": "x"}, {**form, "state": "gone"}, {**form, "memory_id": ""}):
        assert world.client.post("/fact/correct", data=refused, headers=ORIGIN).status_code == 400
    evil = world.client.post("/fact/correct", data=form, headers={"Origin": "http://evil.example"})
    assert evil.status_code == 403
    assert canonical_dump(graph) == before  # nothing refused wrote anything
    done = world.client.post("/fact/correct", data=form, headers=ORIGIN, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"/character/{world.char}"
    page = world.client.get(f"/character/{world.char}").text
    assert _fruits(_search(world)) == ["apple"]  # the previous version holds again
    assert "superseded by hand (explorer: misheard)" in page
    assert 'name="state" value="clear"' in page
    # The correction is confirmed once, after the redirect, and its row says "by hand" once (not twice).
    flash = re.findall(r'<p class="flash" id="flash" role="status">([^<]*)</p>', page)
    assert len(flash) == 1 and "marked superseded by hand" in flash[0] and "favourite fruit" in flash[0], flash
    row = page.split(f'data-memory="{pear}"')[1].split("</tr>")[0]
    assert row.count("by hand") == 1, row
    assert 'id="flash"' not in world.client.get(f"/character/{world.char}").text  # shown once
    assert "face_" not in flash[0] and "character_" in flash[0]  # the person (by name when known), not a slot
    world.client.post("/fact/correct", data={**form, "state": "clear"}, headers=ORIGIN, follow_redirects=False)
    cleared = world.client.get(f"/character/{world.char}").text
    assert "no longer corrected by hand" in cleared.split('id="flash"')[1].split("</p>")[0]
    assert _fruits(_search(world)) == ["pear"]
    mango = rows(graph, "MATCH (m:Memory {text: $t}) RETURN m.memory_id AS id", t=world.texts["mango"])[0]["id"]
    world.client.post("/fact/correct", data={**form, "memory_id": mango, "state": "current"}, headers=ORIGIN)
    assert _fruits(_search(world)) == ["mango", "pear"]  # restored beside the newest value


def test_the_mcp_write_tool_corrects_a_fact_and_refuses_what_has_no_slot(world: World, graph: MemoryGraph) -> None:
    pear = rows(graph, "MATCH (m:Memory {text: $t}) RETURN m.memory_id AS id", t=world.texts["pear"])[0]["id"]

    async def calls() -> list[Any]:
        async with Client(build_server(McpService(graph.settings, graph), allow_writes=True)) as client:
            out = []
            for args in ({"memory_id": pear, "state": "superseded", "note": "wrong"},
                         {"memory_id": pear, "state": "superseded"}, {"memory_id": pear, "state": "sideways"},
                         {"memory_id": "no-such-memory", "state": "clear"}):
                result = await client.call_tool("correct_fact", args)
                out.append((result.is_error, result.structured_content, result.content[0].text))
            return out

    first, again, bad, missing = anyio.run(calls)
    assert not first[0] and first[1]["changed"] and first[1]["superseded"] == "superseded by hand"
    assert not again[0] and not again[1]["changed"]  # idempotent
    assert bad[0] and "state" in bad[2] and "\n" not in bad[2].strip()
    assert missing[0] and "does not exist" in missing[2]
    assert _fruits(_search(world)) == ["apple"]
    via = rows(graph, "MATCH (m:Memory {memory_id: $id}) RETURN m.manual_via AS via", id=pear)[0]["via"]
    assert via == "mcp"
