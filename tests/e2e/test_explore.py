"""The explorer in a real browser (headless Chromium from Debian, driven by Playwright) over the real Neo4j
holding the ingested generated media: pages load without console errors, the character page shows the right
face crops, and a manual "not the same person" vote fixes a wrong merge. Screenshots are saved as artifacts
under .m3graph/test-artifacts/explorer/.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from playwright.sync_api import Browser, Page, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from m3graph.devkit.testmedia import Manifest, build_test_media
from m3graph.embedding import text_embedder
from m3graph.explore.security import csrf_for
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import EquivalenceVote
from m3graph.ingest.pipeline import ingest_video_inprocess
from tests.helpers.explorer import running_explorer
from tests.helpers.graph import variant, wipe, with_settings

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / ".m3graph" / "test-artifacts" / "explorer"
TOKEN = "explorer-test-token"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


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
    with running_explorer(ingested, TOKEN) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Browser, server: str) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # the issue-36 review size
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
    assert page.locator("#timeline tr").count() == 1 + len(ingested.ex.read("explore/video_clips", source_id="tm-a"))
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
    shown = {parse_qs(urlsplit(src).query)["uri"][0]
             for src in crops.evaluate_all("imgs => imgs.map(i => i.getAttribute('src'))")}
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
    with page.expect_navigation():
        row.locator("button.different").click()
    assert urlsplit(page.url).path.startswith("/character/"), page.content()  # not an error page
    assert _character_of(ingested, obama_voice) == _character_of(ingested, obama_face)
    assert _character_of(ingested, obama_voice) != _character_of(ingested, biden_face)
    assert f"voice_{obama_voice}" not in page.locator("#members").inner_text()
    assert page.locator("#history tr", has_text="different").count() == 1
    assert "not the same person" in page.locator("#flash").inner_text()  # the vote is confirmed on arrival
    _shot(page, "fixed")
    # undo restores the model votes' grouping, and the history keeps the undone vote
    with page.expect_navigation():
        page.locator("#history button", has_text="undo").click()
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
    for origin, site, admitted in (("null", "same-origin", True), ("null", "cross-site", False), ("null", None, False),
                                   (server, "cross-site", False), (server, None, True)):
        # What Chromium sends from the explorer's own pages under Referrer-Policy: no-referrer is Origin: null
        # with Sec-Fetch-Site: same-origin; a foreign page's form says cross-site.
        headers = {"Origin": origin, **({"Sec-Fetch-Site": site} if site else {})}
        r = requests.post(f"{server}/vote", data={**form, "verdict": "same", "a": "0", "b": "0"}, cookies=cookies,
                          headers=headers, timeout=30, allow_redirects=False)
        # admitted, the vote (entity 0 with itself) is refused by the store (400 or 404): nothing is written
        assert (r.status_code in (400, 404), r.status_code == 403) == (admitted, not admitted), (origin, site, r)
    no_csrf = requests.post(f"{server}/vote", data={**form, "csrf": "x"}, cookies=cookies,
                         headers={"Origin": server}, timeout=30)
    assert no_csrf.status_code == 400
    outside = requests.get(f"{server}/media", params={"uri": "file:///etc/passwd", "v": "tm-a", "c": "0"},
                           cookies=cookies, timeout=30)
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


# -- security (issue 21): headers, bad ids, Host, bind checks, media allow-list ---------------------------------
COOKIES = {"m3graph_explore": TOKEN}
HUGE = str(2**64)  # beyond Neo4j's 64-bit integers


def _get(server: str, path: str, **kwargs: Any) -> requests.Response:
    return requests.get(f"{server}{path}", cookies=COOKIES, timeout=30, allow_redirects=False, **kwargs)


def test_every_response_carries_the_security_headers(server: str) -> None:
    responses = [_get(server, "/"), _get(server, "/character/999999999"), _get(server, "/static/app.css"),
                 requests.get(f"{server}/", timeout=30),  # 401 without the token
                 _get(server, "/", headers={"Host": "evil.example"})]  # 421
    assert [r.status_code for r in responses] == [200, 404, 200, 401, 421]
    for r in responses:
        csp = r.headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert r.headers["X-Frame-Options"] == "DENY"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["Referrer-Policy"] == "no-referrer"


def test_templates_have_no_inline_script_or_style() -> None:
    """What lets the CSP forbid inline code: every script is a file of this server."""
    for template in (REPO / "m3graph" / "explore" / "templates").glob("*.html"):
        text = template.read_text()
        for opening in text.split("<script")[1:]:
            assert opening.lstrip().startswith("src="), f"{template.name}: inline <script>"
        assert "<style" not in text and " style=" not in text and "onclick" not in text, template.name


def test_bad_ids_are_404_or_422_never_500(server: str, ingested: MemoryGraph) -> None:
    cases = {
        "/media?uri=x%00y&v=tm-a&c=0": 404,
        "/media?uri=x%00y": 422,  # no clip to check the reference against
        f"/media?uri=x&v=tm-a&c={HUGE}": 422,
        f"/avatar/{HUGE}": 422,
        f"/character/{HUGE}": 422,
        "/character/-1": 422,
        f"/clip/tm-a/{HUGE}": 422,
        "/clip/tm-a/99999": 404,
        "/clip/no-such-video/0": 404,
        f"/graph/tm-a?start={HUGE}": 422,
        f"/api/graph/tm-a?max_nodes={HUGE}": 422,
        f"/search?q=x&before_clip={HUGE}": 400,
        "/search?q=x&before_clip=abc": 400,
        "/character/987654321": 404,
    }
    got = {path: _get(server, path).status_code for path in cases}
    assert got == cases
    csrf = csrf_for(TOKEN)
    for form in ({"a": HUGE, "b": "1", "verdict": "same"}, {"a": "x", "b": "1", "verdict": "same"}):
        r = requests.post(f"{server}/vote", data={"csrf": csrf, **form}, cookies=COOKIES,
                          headers={"Origin": server}, timeout=30, allow_redirects=False)
        assert r.status_code == 400, form
    r = requests.post(f"{server}/delete", data={"csrf": csrf, "confirm": "yes", "kind": "character", "ident": "x"},
                      cookies=COOKIES, headers={"Origin": server}, timeout=30, allow_redirects=False)
    assert r.status_code == 400


def test_the_host_header_must_name_this_server(server: str) -> None:
    port = urlsplit(server).port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        assert _get(server, "/", headers={"Host": host}).status_code == 200, host
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1"):
        assert _get(server, "/", headers={"Host": host}).status_code == 421, host
    assert _get(server, "/healthz", headers={"Host": "evil.example"}).status_code == 421


@pytest.mark.parametrize(("args", "message"), [
    (["--port", "70000"], "--port: port must be 1-65535, got 70000"),
    (["--port", "0"], "--port: port must be 1-65535, got 0"),
    (["--host", "0.0.0.0"], "--host 0.0.0.0: not a loopback address; add --allow-remote"),
    (["--host", "192.0.2.1", "--port", "8765"], "--host 192.0.2.1: not a loopback address"),
])
def test_explore_refuses_a_bad_bind_in_one_line(args: list[str], message: str) -> None:
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "m3graph.cli", "explore", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert done.returncode == 65, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), done.stderr


def test_media_serves_only_files_the_graph_references(server: str, ingested: MemoryGraph) -> None:
    (crop,) = _rows(ingested, "MATCH (o:FaceObs {video_id: 'tm-a'}) WHERE o.crop_uri IS NOT NULL "
                              "RETURN o.crop_uri AS uri, o.clip_index AS clip ORDER BY o.quality DESC LIMIT 1")
    ok = _get(server, "/media", params={"uri": crop["uri"], "v": "tm-a", "c": crop["clip"]})
    assert ok.status_code == 200 and ok.headers["content-type"].startswith("image/") and len(ok.content) > 100
    # the same file named from another clip is not a reference the graph holds
    other = _get(server, "/media", params={"uri": crop["uri"], "v": "tm-a", "c": crop["clip"] + 1000})
    assert other.status_code == 404
    # a file under the data directory that the graph does not reference
    stray = ingested.settings.data_dir / "faces" / "stray.jpg"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(ok.content)
    try:
        for uri in (str(stray), stray.as_uri()):
            assert _get(server, "/media", params={"uri": uri, "v": "tm-a", "c": crop["clip"]}).status_code == 404
    finally:
        stray.unlink()


def test_undoing_a_merge_in_the_explorer_restores_the_old_id(server: str, ingested: MemoryGraph) -> None:
    faces = _person_faces(ingested)
    a, b = _character_of(ingested, faces["obama"]), _character_of(ingested, faces["biden"])
    assert a != b
    old = max(a, b)
    form = {"csrf": csrf_for(TOKEN), "a": str(faces["obama"]), "b": str(faces["biden"]), "verdict": "same",
            "next": f"/character/{min(a, b)}"}
    r = requests.post(f"{server}/vote", data=form, cookies=COOKIES, headers={"Origin": server}, timeout=60,
                      allow_redirects=False)
    assert r.status_code == 303
    merged = _get(server, f"/character/{old}")
    assert merged.status_code == 303 and merged.headers["location"] == f"/character/{min(a, b)}"  # an alias now
    (vote,) = [h for h in ingested.vote_history(faces["obama"]) if h.undone_at is None and h.verdict == "same"]
    r = requests.post(f"{server}/vote/undo", data={"csrf": csrf_for(TOKEN), "vote_id": str(vote.vote_id)},
                      cookies=COOKIES, headers={"Origin": server}, timeout=60, allow_redirects=False)
    assert r.status_code == 303
    assert (_character_of(ingested, faces["obama"]), _character_of(ingested, faces["biden"])) == (a, b)
    page = _get(server, f"/character/{old}")
    assert page.status_code == 200  # its own page again, not a redirect to the other person
    person = "obama" if old == a else "biden"
    assert f'data-entity="{faces[person]}"' in page.text


def test_ask_is_offered_only_with_a_chat_model(server: str, ingested: MemoryGraph, tmp_path: Path) -> None:
    from m3graph.cli.explore import ask_unavailable
    from m3graph.settings import LLMBackend

    assert 'id="ask-form"' not in _get(server, "/search").text  # the test server has no answerer
    llm = ingested.settings.llm

    def with_control(**update: Any) -> Any:
        control = llm.control.model_copy(update=update)
        return ingested.settings.model_copy(update={"llm": llm.model_copy(update={"control": control})})

    assert "backend = none" in (ask_unavailable(with_control(backend=LLMBackend.NONE)) or "")
    packaged = with_control(backend=LLMBackend.LLAMA_CPP, model="qwen2.5-coder-1.5b")
    empty = packaged.model_copy(update={"llm": packaged.llm.model_copy(update={"models_dir": tmp_path})})
    assert "m3graph model install" in (ask_unavailable(empty) or "")
    assert "is not there" in (ask_unavailable(with_control(model=str(tmp_path / "missing.gguf"))) or "")
    (tmp_path / "present.gguf").write_bytes(b"GGUF")
    assert ask_unavailable(with_control(model=str(tmp_path / "present.gguf"))) is None
    assert ask_unavailable(with_control(backend=LLMBackend.OPENAI)) is None


def test_clip_links_stop_at_the_ends(server: str, ingested: MemoryGraph) -> None:
    last = max(r["clip_index"] for r in ingested.ex.read("explore/video_clips", source_id="tm-a"))
    first = _get(server, "/clip/tm-a/0").text
    assert 'id="previous"' not in first and 'href="/clip/tm-a/1"' in first
    end = _get(server, f"/clip/tm-a/{last}").text
    assert 'id="next"' not in end and f'href="/clip/tm-a/{last - 1}"' in end


def test_search_lists_clips_best_first(page: Page, server: str, ingested: MemoryGraph) -> None:
    page.goto(f"{server}/search?q=a+person+talking")
    scores = [float(t.split()[-1]) for t in page.locator("#results .result h3 .relevance").all_inner_texts()]
    assert len(scores) >= 2
    assert scores == sorted(scores, reverse=True)
    assert page.locator("#ask-form").count() == 0
    _shot(page, "search-best-first")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_correction_form_picks_entities_with_crops(page: Page, server: str, ingested: MemoryGraph) -> None:
    faces = _person_faces(ingested)
    char = _character_of(ingested, faces["obama"])
    page.goto(f"{server}/character/{char}?video=tm-a")
    choices = page.locator("#pick-b input[name=b]")
    values = {int(v) for v in choices.evaluate_all("xs => xs.map(x => x.value)")}
    assert faces["biden"] in values and faces["obama"] not in values
    assert page.locator("#manual-vote input[type=number]").count() == 0  # no typed ids
    page.wait_for_load_state("networkidle")
    loaded = page.locator("#pick-b img.crop").evaluate_all("imgs => imgs.map(i => i.complete && i.naturalWidth > 0)")
    assert loaded and all(loaded)
    _shot(page, "pickers")
    page.locator(f'#pick-a input[value="{faces["obama"]}"]').check()
    page.locator(f'#pick-b input[value="{faces["biden"]}"]').check()
    with page.expect_navigation():
        page.locator("#manual-vote button.different").click()
    assert urlsplit(page.url).path == f"/character/{char}", page.content()
    history = [h for h in ingested.vote_history(faces["obama"]) if h.verdict == "different" and h.undone_at is None]
    assert {(h.a, h.b) for h in history} >= {(faces["obama"], faces["biden"])}
    for h in history:
        ingested.undo_vote(h.vote_id)
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_the_graph_view_filters_kinds_and_labels_on_demand(page: Page, server: str, ingested: MemoryGraph) -> None:
    page.mouse.move(1390, 890)  # the pointer off the graph: a hovered node shows its and its neighbours' labels
    page.goto(f"{server}/graph/tm-a")
    page.wait_for_function("() => window.m3graphGraphStats !== undefined", timeout=30_000)
    visible = "k => window.m3graphGraph.nodes('.' + k).filter(n => n.visible()).length"
    labelled = "() => window.m3graphGraph.nodes().filter(n => n.style('label') !== '').length"
    state = ("() => ({memory: window.m3graphGraph.nodes('.Memory').filter(n => n.visible()).length, "
             "face: window.m3graphGraph.nodes('.Face').filter(n => n.visible()).length, "
             "labelled: window.m3graphGraph.nodes().filter(n => n.style('label') !== '').length, "
             "nodes: window.m3graphGraph.nodes().length, near: window.m3graphGraph.nodes('.near').length, "
             "selected: window.m3graphGraph.nodes(':selected').length})")

    def settles(condition: str) -> None:
        """The drawing reaches `condition` (a JS expression over the state above) within 5 s; else the state."""
        try:
            page.wait_for_function(f"() => {{ const s = ({state})(); return {condition}; }}", timeout=5_000)
        except PlaywrightError:
            pytest.fail(f"graph state never met {condition}: {page.evaluate(state)}")

    settles("s.memory > 0 && s.labelled === 0")  # no labels until asked for
    for kind in ("Clip", "Memory", "Face", "Voice", "Speaker", "Character"):  # the legend names every kind
        assert page.locator(f'#graph-filters input[data-kind="{kind}"]').count() == 1
    page.locator('#graph-filters input[data-kind="Memory"]').uncheck()
    settles("s.memory === 0 && s.face > 0")
    page.locator("#graph-labels").check()
    settles("s.labelled === s.nodes")
    assert page.evaluate(labelled) == page.evaluate("() => window.m3graphGraph.nodes().length")
    _shot(page, "graph-filters")
    page.locator("#graph-labels").uncheck()
    page.locator('#graph-filters input[data-kind="Memory"]').check()
    settles("s.memory > 0 && s.labelled === 0")
    assert page.evaluate(visible, "Memory") > 0
    assert page.console_errors == []  # type: ignore[attr-defined]
