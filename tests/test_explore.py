# ruff: noqa: F811  (fixtures imported from graph_fixtures are requested by name)
"""The explorer in a real browser (headless Chromium from Debian, driven by Playwright) over the real Neo4j
holding the ingested generated media: pages load without console errors, the character page shows the right
face crops, and a manual "not the same person" vote fixes a wrong merge. Screenshots are saved as artifacts
under .m3graph/test-artifacts/explorer/.
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import uvicorn
from graph_fixtures import memory_graph, variant, wipe, with_settings  # noqa: F401
from playwright.sync_api import Browser, Page, sync_playwright

from m3graph.devkit.testmedia import Manifest, build_test_media
from m3graph.embedding import text_embedder
from m3graph.explore import assets
from m3graph.explore.app import create_app
from m3graph.explore.security import csrf_for
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import EquivalenceVote
from m3graph.ingest.pipeline import ingest_video_inprocess

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / ".m3graph" / "test-artifacts" / "explorer"
TOKEN = "explorer-test-token"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ingested(memory_graph: MemoryGraph, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryGraph]:
    """tm-a and tm-b ingested with perception memories (no chat model), crops and snippets on disk."""
    media: Manifest = build_test_media(REPO / ".m3graph" / "testmedia")
    wipe(memory_graph)
    settings = variant(memory_graph.settings, identity={"face_threshold": None, "voice_threshold": None})
    graph = with_settings(memory_graph, settings.model_copy(update={"data_dir": tmp_path_factory.mktemp("data")}))
    embedder = text_embedder(graph.settings)
    for vid in ("tm-a", "tm-b"):
        ingest_video_inprocess(graph, embedder, media.path(vid), vid)
    graph.media = media  # type: ignore[attr-defined]
    yield graph
    wipe(memory_graph)


@pytest.fixture(scope="module")
def server(ingested: MemoryGraph) -> Iterator[str]:
    assets.build()
    embedder = text_embedder(ingested.settings)
    app = create_app(ingested.settings, ingested, TOKEN, embed=lambda q: embedder.embed([q])[0].tolist())
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline, "the explorer did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Browser, server: str) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(f"{server}/?token={TOKEN}")  # sets the cookie, then every page works without the token
    pg.console_errors = errors  # type: ignore[attr-defined]
    yield pg
    context.close()


def _shot(pg: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _rows(graph: MemoryGraph, query: str, **params: Any) -> list[dict[str, Any]]:
    with graph.ex.session() as session:
        return [r.data() for r in session.run(query, params)]


def _person_faces(graph: MemoryGraph) -> dict[str, int]:
    """Person → face entity, from frames where the manifest shows that person alone."""
    media: Manifest = graph.media  # type: ignore[attr-defined]
    out: dict[str, int] = {}
    spec = media.video("tm-a")
    for row in _rows(graph, "MATCH (o:FaceObs {video_id: 'tm-a'})-[:OF]->(f:Face) "
                            "RETURN o.frame_time_s AS t, f.entity_id AS id"):
        shot = next((s for s in spec.shots if s.start_s <= row["t"] < s.end_s), None)
        if shot is not None and len(shot.people) == 1:
            out.setdefault(shot.people[0], row["id"])
    return out


def _character_of(graph: MemoryGraph, entity: int) -> int:
    return graph.characters_of([entity])[entity]


def test_pages_load_without_console_errors(page: Page, server: str, ingested: MemoryGraph) -> None:
    page.goto(f"{server}/")
    assert page.locator("#videos").inner_text().count("tm-") == 2
    _shot(page, "index")
    page.goto(f"{server}/video/tm-a")
    assert page.locator("#timeline tr").count() == 1 + len(ingested.ex.read("explore/video_clips", video_id="tm-a"))
    _shot(page, "timeline")
    page.goto(f"{server}/clip/tm-a/0")
    assert page.locator("#memories li").count() > 0
    assert page.locator("#memories a.char").count() > 0  # <character_K> rendered as links with avatars
    assert page.locator("#clip-video").count() == 1
    _shot(page, "clip")
    page.goto(f"{server}/search?q=notebook&video=tm-a")
    assert page.locator("#results .result").count() > 0
    _shot(page, "search")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_character_page_shows_the_right_crops(page: Page, server: str, ingested: MemoryGraph) -> None:
    faces = _person_faces(ingested)
    char = _character_of(ingested, faces["obama"])
    page.goto(f"{server}/character/{char}")
    crops = page.locator(f'#faces figure[data-entity="{faces["obama"]}"] img.crop')
    assert crops.count() > 0
    page.wait_for_load_state("networkidle")
    loaded = crops.evaluate_all("imgs => imgs.map(i => i.complete && i.naturalWidth > 0)")
    assert all(loaded)
    assert page.locator(f'#faces figure[data-entity="{faces["biden"]}"]').count() == 0  # not someone else's face
    # the crops the page shows are this face's own observations
    shown = {src.split("uri=", 1)[1] for src in crops.evaluate_all("imgs => imgs.map(i => i.getAttribute('src'))")}
    own = {r["u"] for r in _rows(ingested, "MATCH (o:FaceObs)-[:OF]->(:Face {entity_id: $f}) RETURN o.crop_uri AS u",
                                 f=faces["obama"])}
    assert shown <= own
    _shot(page, "character")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_a_manual_vote_fixes_a_wrong_merge(page: Page, server: str, ingested: MemoryGraph) -> None:
    faces = _person_faces(ingested)
    obama_face, biden_face = faces["obama"], faces["biden"]
    obama_voice = next(v for v, c in ingested.characters_of(
        [r["v"] for r in _rows(ingested, "MATCH (v:Voice) RETURN v.entity_id AS v")]).items()
        if c == _character_of(ingested, obama_face))
    # A wrong model vote, stronger than the meta-clip evidence: obama's voice now joins biden's face.
    for vid, clip in (("tm-a", 0), ("tm-a", 1), ("tm-b", 0)):
        ingested.record_votes(vid, clip, [EquivalenceVote(face_id=biden_face, voice_id=obama_voice, source="import")],
                              source="import")
    wrong = _character_of(ingested, biden_face)
    assert _character_of(ingested, obama_voice) == wrong  # the wrong merge happened
    page.goto(f"{server}/character/{wrong}")
    _shot(page, "wrong-merge")
    row = page.locator("#votes tr", has_text=f"voice_{obama_voice}").filter(has_text=f"face_{biden_face}")
    row.locator("button.different").click()
    page.wait_for_load_state("networkidle")
    assert _character_of(ingested, obama_voice) == _character_of(ingested, obama_face)
    assert _character_of(ingested, obama_voice) != _character_of(ingested, biden_face)
    assert f"voice_{obama_voice}" not in page.locator("#members").inner_text()
    assert page.locator("#history tr", has_text="different").count() == 1
    _shot(page, "fixed")
    # undo restores the model votes' grouping, and the history keeps the undone vote
    page.locator("#history button", has_text="undo").click()
    page.wait_for_load_state("networkidle")
    assert _character_of(ingested, obama_voice) == _character_of(ingested, biden_face)
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_the_graph_view_draws_the_neighbourhood(page: Page, server: str, ingested: MemoryGraph) -> None:
    page.goto(f"{server}/graph/tm-a")
    page.wait_for_function("() => window.m3graphGraphStats !== undefined", timeout=30_000)
    stats = page.evaluate("() => window.m3graphGraphStats")
    data = requests.get(f"{server}/api/graph/tm-a", cookies={"m3graph_explore": TOKEN}, timeout=30).json()
    assert stats["nodes"] == len(data["nodes"]) > 5
    labels = {n["label"] for n in data["nodes"]}
    assert {"Clip", "Memory", "Face", "Voice", "Character"} <= labels
    _shot(page, "graph")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_no_token_no_cross_origin_writes(server: str, ingested: MemoryGraph) -> None:
    assert requests.get(f"{server}/", timeout=30).status_code == 401
    assert requests.get(f"{server}/?token=wrong", timeout=30).status_code == 401
    cookies = {"m3graph_explore": TOKEN}
    form = {"csrf": csrf_for(TOKEN), "a": "1", "b": "2", "verdict": "same"}
    evil = requests.post(f"{server}/vote", data=form, cookies=cookies, headers={"Origin": "http://evil.example"},
                         timeout=30)
    assert evil.status_code == 403
    no_csrf = requests.post(f"{server}/vote", data={**form, "csrf": "x"}, cookies=cookies,
                         headers={"Origin": server}, timeout=30)
    assert no_csrf.status_code == 400
    outside = requests.get(f"{server}/media", params={"uri": "file:///etc/passwd"}, cookies=cookies,
                           timeout=30)
    assert outside.status_code == 404
    before = ingested.counts()
    refused = requests.post(f"{server}/delete", data={"csrf": csrf_for(TOKEN), "kind": "video", "ident": "tm-a"},
                         cookies=cookies, headers={"Origin": server}, timeout=30)
    assert refused.status_code == 400  # not confirmed
    assert ingested.counts() == before


def test_the_graph_view_draws_2000_nodes(page: Page, server: str, ingested: MemoryGraph) -> None:
    """Not timed here (the time budget is measured by `python -m bench.explorer`, docs/benchmarks.md)."""
    from bench.explorer import VIDEO, load

    load(ingested, clips=2000 // 12 + 2, memories_per_clip=9)
    try:
        page.goto(f"{server}/graph/{VIDEO}?max_nodes=2000")
        page.wait_for_function("() => window.m3graphGraphStats !== undefined", timeout=180_000)
        stats = page.evaluate("() => window.m3graphGraphStats")
        assert stats["nodes"] == 2000 and stats["truncated"]
        assert page.locator("#graph canvas").count() > 0
        _shot(page, "graph-2000")
        assert page.console_errors == []  # type: ignore[attr-defined]
    finally:
        ingested.delete_video(VIDEO)
