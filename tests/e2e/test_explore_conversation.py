"""A conversation in the explorer, as an analyst sees it (issue 36): people by name, sessions by date, search hits
dated and marked with a person picker, confirmations after corrections, a graph view that starts with sessions and
people, and a 404 that suggests the closest names. Over the real Neo4j, with a slice of LoCoMo conversation 26
(the dev set in ../shared/data/conversations: its first sessions, a few turns each, so the test stays fast).

Headless Chromium (Debian's, driven by Playwright) screenshots every page at 1400x900 into
.m3graph/test-artifacts/explorer/conversation-*.png, the artifacts CI keeps.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
import requests  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from m3graph.embedding import text_embedder  # noqa: E402
from m3graph.explore.security import csrf_for  # noqa: E402
from m3graph.graphdb.store import MemoryGraph  # noqa: E402
from m3graph.ingest.chat.ingest import ingest_conversation  # noqa: E402
from m3graph.ingest.chat.locomo import load_locomo  # noqa: E402
from tests.helpers.explorer import running_explorer  # noqa: E402
from tests.helpers.graph import rows, wipe, with_settings  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
LOCOMO = REPO.parent / "shared" / "data" / "conversations" / "locomo-26.json"
ARTIFACTS = REPO / ".m3graph" / "test-artifacts" / "explorer"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "conversation-ui-token"
COOKIES = {"m3graph_explore": TOKEN}
SOURCE = "locomo-26-slice"
SESSIONS, TURNS = 6, 12  # the first six sessions, their first twelve turns each (72 turns)


def _slice(tmp: Path) -> Path:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    kept: dict[str, Any] = {"speaker_a": data["speaker_a"], "speaker_b": data["speaker_b"]}
    for n in range(1, SESSIONS + 1):
        kept[f"session_{n}_date_time"] = data[f"session_{n}_date_time"]
        kept[f"session_{n}"] = data[f"session_{n}"][:TURNS]
    path = tmp / f"{SOURCE}.json"
    path.write_text(json.dumps(kept), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def world(memory_graph: MemoryGraph, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryGraph]:
    if not LOCOMO.is_file():
        pytest.fail(f"the conversation dev set is missing: {LOCOMO} (part of the project's checkout)")
    wipe(memory_graph)
    tmp = tmp_path_factory.mktemp("conversation-ui")
    g = with_settings(memory_graph, memory_graph.settings.model_copy(update={"data_dir": tmp / "data"}))
    conv, _ = load_locomo(_slice(tmp))
    summary = ingest_conversation(g, replace(conv, source_id=SOURCE), text_embedder(g.settings))
    assert len(summary.sessions_written) == SESSIONS, summary
    yield g
    wipe(memory_graph)


@pytest.fixture(scope="module")
def server(world: MemoryGraph) -> Iterator[str]:
    with running_explorer(world, TOKEN) as url:
        yield url


def _get(server: str, path: str, **params: Any) -> requests.Response:
    return requests.get(f"{server}{path}", params=params, cookies=COOKIES, timeout=60)


def _speakers(g: MemoryGraph) -> dict[str, int]:
    """speaker name -> character id."""
    found = rows(g, "MATCH (s:Speaker {source_id: $v})-[:IS]->(c:Character) RETURN s.speaker_name AS name, "
                    "c.char_id AS char", v=SOURCE)
    return {r["name"]: int(r["char"]) for r in found}


def _memories(g: MemoryGraph, clip: int) -> int:
    """The memories of one session (its turns, and the name facts of speakers it introduced)."""
    return int(rows(g, "MATCH (m:Memory)-[:IN_CLIP]->(:Clip {clip_key: $k}) RETURN count(m) AS n",
                    k=f"{SOURCE}#{clip}")[0]["n"])


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_conversation_page_lists_sessions_by_date_and_speakers_by_name(server: str, world: MemoryGraph) -> None:
    page = _get(server, f"/video/{SOURCE}")
    assert page.status_code == 200, page.text
    html = page.text
    people = _speakers(world)
    assert set(people) == {"Caroline", "Melanie"}
    table = html.split('id="timeline"')[1].split("</table>")[0]
    assert table.count("<tr class=") == SESSIONS
    # LoCoMo's session 1 began "1:56 pm on 8 May, 2023": shown as a date and a time, not seconds or ISO text.
    assert "Mon 8 May 2023, 13:56" in table
    assert " s</td>" not in table and "+00:00" not in html and "T13:56" not in html
    for th in ("faces", "voices"):  # a conversation has no video columns
        assert f"<th>{th}</th>" not in html
    for name, char in people.items():
        assert f'href="/character/{char}"' in table and name in _text(table)
    assert "speaker_" not in _text(table)
    assert "Session 1 " in _text(table) and "memorized" not in _text(table)  # sessions counted from 1, no jargon
    session = _text(_get(server, f"/clip/{SOURCE}/1").text)
    assert f"{SOURCE} · Session 2 Thu 25 May 2023, 13:14" in session  # CLIP_1 is the second session
    home = _get(server, "/").text
    row = home.split('data-kind="conversation"')[1].split("</tr>")[0]
    assert f">{SOURCE}<" in row and f"{SESSIONS} sessions" in row and " s</td>" not in row


def test_people_are_shown_and_found_by_name(server: str, world: MemoryGraph) -> None:
    people = _speakers(world)
    mel = people["Melanie"]
    home = _text(_get(server, "/").text)
    assert f"Melanie (character_{mel})" in home and f"Caroline (character_{people['Caroline']})" in home
    person = _get(server, f"/character/{mel}").text
    assert re.search(rf"<h1>.*Melanie <span class=\"cid\">\(character_{mel}\)</span></h1>", person)
    assert "<title>Melanie (character_" in person
    found = requests.get(f"{server}/person", params={"name": "melanie"}, cookies=COOKIES, timeout=30,
                         allow_redirects=False)
    assert found.status_code == 303 and found.headers["location"] == f"/character/{mel}"
    # Unknown people and sources: 404 with the closest names to pick from.
    for path, params, expected in (("/person", {"name": "Melany"}, f'href="/character/{mel}"'),
                                   ("/character/987654321", {}, f'href="/character/{mel}"'),
                                   ("/video/locomo-26-slise", {}, f'href="/video/{SOURCE}"'),
                                   ("/graph/locomo-26", {}, f'href="/video/{SOURCE}"')):
        missing = _get(server, path, **params)
        assert missing.status_code == 404, path
        assert 'id="suggestions"' in missing.text and expected in missing.text, (path, missing.text[-800:])


def test_search_hits_are_dated_marked_and_scoped_by_the_person_picker(server: str, world: MemoryGraph) -> None:
    people = _speakers(world)
    html = _get(server, "/search", q="painting pottery", video=SOURCE).text
    picker = html.split('id="person"')[1].split("</select>")[0]
    for name, char in people.items():
        assert f'<option value="{char}" >{name} (character_{char})</option>' in picker
    results = html.split('id="results"')[1]
    hits = results.split('<div class="result"')[1:]
    assert hits, "the slice mentions painting"
    assert all('class="when"' in h for h in hits)  # every hit dated
    assert re.search(r"<mark>paint\w*</mark>", results, re.IGNORECASE)
    assert "&lt;speaker_" not in results and "<speaker_" not in results
    scoped = _get(server, "/search", q="painting pottery", video=SOURCE, person=str(people["Melanie"])).text
    assert f'<option value="{people["Melanie"]}" selected>' in scoped
    mel = f'href="/character/{people["Melanie"]}"'
    scoped_hits = scoped.split('id="results"')[1].split('<div class="result"')[1:]
    assert scoped_hits and all(mel in h for h in scoped_hits)  # every clip found has a line of hers
    nodes = _get(server, "/search", q="painting pottery", video=SOURCE, person=str(people["Melanie"]),
                 mode="node").text
    lines = re.findall(r'<li class="episodic[^"]*">(.*?)</li>', nodes.split('id="results"')[1], re.S)
    assert lines and all(mel in line for line in lines)  # memory by memory: only hers
    assert _get(server, "/search", q="x", person="Melanie").status_code == 400  # the picker sends ids


def test_a_vote_is_confirmed_after_the_redirect(server: str, world: MemoryGraph) -> None:
    speakers = rows(world, "MATCH (s:Speaker {source_id: $v}) RETURN s.entity_id AS id ORDER BY id", v=SOURCE)
    a, b = (int(r["id"]) for r in speakers)
    char = _speakers(world)["Caroline"]
    session = requests.Session()
    session.cookies.update(COOKIES)
    form = {"csrf": csrf_for(TOKEN), "a": str(a), "b": str(b), "verdict": "different", "next": f"/character/{char}"}
    done = session.post(f"{server}/vote", data=form, headers={"Origin": server}, timeout=30, allow_redirects=False)
    assert done.status_code == 303
    page = session.get(f"{server}{done.headers['location']}", timeout=30).text
    flash = re.findall(r'<p class="flash" id="flash" role="status">([^<]*)</p>', page)
    assert len(flash) == 1 and "not the same person" in flash[0], flash
    assert 'id="flash"' not in session.get(f"{server}/character/{char}", timeout=30).text  # once
    vote_id = rows(world, "MATCH (v:IdentityVote) RETURN max(v.vote_id) AS id")[0]["id"]
    undo = session.post(f"{server}/vote/undo", data={"csrf": form["csrf"], "vote_id": str(vote_id),
                                                     "next": f"/character/{char}"},
                        headers={"Origin": server}, timeout=30)
    assert f"Vote {vote_id} undone" in undo.text.split('id="flash"')[1].split("</p>")[0]


def test_the_graph_view_starts_with_sessions_and_people(server: str, world: MemoryGraph) -> None:
    people = _speakers(world)
    page = _get(server, f"/graph/{SOURCE}").text
    assert 'data-view="overview"' in page
    data = _get(server, f"/api/graph/{SOURCE}", view="overview").json()
    kinds = [n["label"] for n in data["nodes"]]
    assert kinds.count("Clip") == SESSIONS and kinds.count("Character") == 2 and set(kinds) == {"Clip", "Character"}
    captions = {n["caption"] for n in data["nodes"]}
    assert {f"{name} (character_{char})" for name, char in people.items()} <= captions
    assert f"Session 1 ({_memories(world, 0)} memories)\nMon 8 May 2023, 13:56" in captions
    detail = _get(server, f"/api/graph/{SOURCE}", start="0", end="0").json()
    assert sum(n["label"] == "Memory" for n in detail["nodes"]) == _memories(world, 0) >= TURNS
    assert not [n["caption"] for n in detail["nodes"] if re.search(r"<(face|voice|speaker|character)_", n["caption"])]
    assert _get(server, f"/graph/{SOURCE}", view="ring").status_code == 400


def test_screenshots_in_chromium(server: str, world: MemoryGraph) -> None:
    """Home, the conversation, a session, a person, a search and the graph (overview, then one session opened)
    at 1400x900, without console errors."""
    people = _speakers(world)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            errors: list[str] = []
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{server}/?token={TOKEN}")
            shots = {"home": "/", "conversation": f"/video/{SOURCE}", "session": f"/clip/{SOURCE}/1",
                     "person": f"/character/{people['Melanie']}",
                     "search": f"/search?q=painting+pottery&video={SOURCE}&person={people['Melanie']}"}
            for name, path in shots.items():
                page.goto(f"{server}{path}")
                page.screenshot(path=str(ARTIFACTS / f"conversation-{name}.png"))
            page.goto(f"{server}/graph/{SOURCE}")
            page.wait_for_function("() => window.m3graphGraphStats !== undefined", timeout=30_000)
            assert page.evaluate("() => window.m3graphGraphStats.view") == "overview"
            page.screenshot(path=str(ARTIFACTS / "conversation-graph.png"))
            first = page.evaluate("() => window.m3graphGraph.nodes('.Clip')[1].id()")
            page.evaluate("id => window.m3graphToggle(id)", first)
            page.wait_for_function("() => window.m3graphGraph.nodes('.Memory').length > 0", timeout=30_000)
            assert page.evaluate("() => window.m3graphGraph.nodes('.Memory').length") == _memories(world, 1)
            page.screenshot(path=str(ARTIFACTS / "conversation-graph-session.png"))
        finally:
            browser.close()
    assert errors == []
    assert all((ARTIFACTS / f"conversation-{n}.png").stat().st_size > 10_000
               for n in ("home", "conversation", "session", "person", "search", "graph", "graph-session"))


def test_the_whole_conversation_graph_stays_readable(server: str, world: MemoryGraph) -> None:
    """All of locomo-26 (19 sessions, 419 turns): the graph view opens on one node per session and per person, not
    a ring of every turn, and is screenshotted at 1400x900 (conversation-graph-locomo-26.png)."""
    conv, _ = load_locomo(LOCOMO)
    whole = "locomo-26-whole"
    summary = ingest_conversation(world, replace(conv, source_id=whole), text_embedder(world.settings))
    sessions = len(summary.sessions_written)
    assert sessions == len(conv.sessions) >= 19 and summary.turns >= 400, summary
    data = _get(server, f"/api/graph/{whole}", view="overview").json()
    kinds = [n["label"] for n in data["nodes"]]
    assert kinds.count("Clip") == sessions and kinds.count("Character") == 2 and len(kinds) == sessions + 2
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{server}/?token={TOKEN}")
            page.goto(f"{server}/graph/{whole}")
            page.wait_for_function("() => window.m3graphGraphStats !== undefined", timeout=30_000)
            assert page.evaluate("() => window.m3graphGraph.nodes('.Clip').length") == sessions
            page.screenshot(path=str(ARTIFACTS / "conversation-graph-locomo-26.png"))
        finally:
            browser.close()
    assert errors == []
    assert (ARTIFACTS / "conversation-graph-locomo-26.png").stat().st_size > 10_000
