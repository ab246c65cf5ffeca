"""Files shared in a conversation, seen by analysts and agents, on the real Neo4j with the offline face models.

One conversation shares two photos (person_01 alone; person_02 alone, from ../shared/data/identity: test-only,
copied into the test's temporary folder), a two-page PDF and a CSV. Checked here:

- the explorer's session page lists the files inline: the photos drawn with their faces boxed and linked to their
  characters, PDF page links; headless Chromium screenshots it (.m3graph/test-artifacts/explorer/);
- `/file/<sha256>` serves a file only because the graph holds it (content type from the graph, nosniff,
  Content-Disposition, a sandbox CSP except for PDF; office files as downloads), and 404 for anything else;
- MCP: search and fetch_clip carry a cited file's reference; `file_text` returns its surrogate text, bounded,
  people as <character_K>; a bad key is a one-line error;
- deleting the character of person_02 deletes their face evidence and crops, while the photo (still held by its
  session) stays with its surrogate, which no longer names them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import anyio  # noqa: E402
import pytest  # noqa: E402
import requests  # noqa: E402
from mcp import Client  # noqa: E402

from m3graph.embedding import text_embedder  # noqa: E402
from m3graph.graphdb.store import MemoryGraph  # noqa: E402
from m3graph.ingest.chat.formats import load_conversation  # noqa: E402
from m3graph.ingest.chat.ingest import ingest_conversation  # noqa: E402
from m3graph.mcp.server import build_server  # noqa: E402
from m3graph.mcp.service import McpService  # noqa: E402
from tests.helpers.explorer import running_explorer  # noqa: E402
from tests.helpers.graph import perception_graph, rows, wipe  # noqa: E402
from tests.helpers.shared_files import pdf_bytes  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FACES = REPO.parent / "shared" / "data" / "identity" / "faces"
ARTIFACTS = REPO / ".m3graph" / "test-artifacts" / "explorer"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "files-ui-token"
SOURCE = "files-ui-chat"
_FACE = re.compile(r"<face_(\d+)>")


def _file(g: MemoryGraph, name: str) -> dict[str, Any]:
    (row,) = rows(g, "MATCH (:Clip {video_id: $v})-[:HAS_FILE {name: $name}]->(f:File) RETURN f.sha256 AS sha, "
                     "f.stored AS stored, f.mime AS mime", v=SOURCE, name=name)
    return row


def _surrogate(g: MemoryGraph, sha: str) -> str:
    (row,) = rows(g, "MATCH (m:Memory)-[:DESCRIBES]->(:File {sha256: $sha}) RETURN m.text AS text", sha=sha)
    return str(row["text"])


@pytest.fixture(scope="module")
def world(memory_graph: MemoryGraph, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryGraph]:
    if not FACES.is_dir():
        pytest.fail(f"the shared identity set is missing: {FACES} (part of the project's checkout)")
    wipe(memory_graph)
    tmp = tmp_path_factory.mktemp("files-ui")
    g = perception_graph(memory_graph, tmp / "data")
    conv = tmp / "conv"
    conv.mkdir()
    shutil.copyfile(FACES / "img1.jpg", conv / "anna.jpg")  # person_01
    shutil.copyfile(FACES / "img26.jpg", conv / "bruno.jpg")  # person_02
    (conv / "lease.pdf").write_bytes(pdf_bytes([["Lease agreement", "Tenant: Ann"], ["Monthly rent: 1200 EUR"]]))
    (conv / "runs.csv").write_text("month,km\nMarch,31\nApril,55\n", encoding="utf-8")
    (conv / "notes.docx").write_bytes(b"")  # never shared: a name in a request must not reach it
    data = {"source_id": SOURCE, "sessions": [
        {"id": "s1", "started_at": "2024-05-01T09:00:00Z", "turns": [
            {"id": "t1", "speaker": "Ann", "text": "me at the lake, and Bruno at work",
             "files": ["anna.jpg", "bruno.jpg"]},
            {"id": "t2", "speaker": "Ann", "text": "the lease and my runs", "files": ["lease.pdf", "runs.csv"]}]}]}
    (conv / "chat.json").write_text(json.dumps(data), encoding="utf-8")
    loaded, _ = load_conversation(conv / "chat.json")
    summary = ingest_conversation(g, loaded, text_embedder(g.settings), files_root=conv)
    assert summary.files_refused == [] and summary.files == 4
    yield g
    wipe(memory_graph)


@pytest.fixture(scope="module")
def server(world: MemoryGraph) -> Iterator[str]:
    with running_explorer(world, TOKEN) as url:
        yield url


def _get(server: str, path: str) -> requests.Response:
    return requests.get(f"{server}{path}", cookies={"m3graph_explore": TOKEN}, timeout=60)


def _faces_of(g: MemoryGraph, sha: str) -> list[dict[str, Any]]:
    return rows(g, "MATCH (o:FaceObs {file_sha256: $sha})-[:OF]->(e:Face)-[:IS]->(c:Character) "
                   "RETURN e.entity_id AS face, c.char_id AS char, o.bbox AS bbox, o.crop_uri AS crop", sha=sha)


def test_photo_faces_name_their_photo(world: MemoryGraph) -> None:
    anna, bruno = _file(world, "anna.jpg")["sha"], _file(world, "bruno.jpg")["sha"]
    a, b = _faces_of(world, anna), _faces_of(world, bruno)
    assert len(a) == 1 and len(b) == 1, (a, b)
    assert a[0]["char"] != b[0]["char"]
    assert {int(n) for n in _FACE.findall(_surrogate(world, anna))} == {a[0]["face"]}
    assert all(len(f["bbox"]) == 4 for f in a + b)


def test_the_session_page_shows_its_files(server: str, world: MemoryGraph) -> None:
    page = _get(server, f"/clip/{SOURCE}/0")
    assert page.status_code == 200, page.text
    html = page.text
    for name in ("anna.jpg", "bruno.jpg", "lease.pdf", "runs.csv"):
        sha = _file(world, name)["sha"]
        assert f'data-sha256="{sha}"' in html and f'href="/file/{sha}"' in html, name
    pdf = _file(world, "lease.pdf")["sha"]
    assert f'href="/file/{pdf}#page=1"' in html and f'href="/file/{pdf}#page=2"' in html
    for name in ("anna.jpg", "bruno.jpg"):
        (face,) = _faces_of(world, _file(world, name)["sha"])
        x1, y1, x2, y2 = face["bbox"]
        assert (f'<rect class="facebox" data-face="{face["face"]}" x="{x1}" y="{y1}" width="{x2 - x1}" '
                f'height="{y2 - y1}"') in html
        assert f'href="/character/{face["char"]}"' in html


def test_files_are_served_only_by_their_key_with_safe_headers(server: str, world: MemoryGraph) -> None:
    photo = _file(world, "anna.jpg")
    got = _get(server, f"/file/{photo['sha']}")
    assert got.status_code == 200 and got.headers["content-type"] == "image/jpeg"
    assert got.content == (world.settings.data_dir / photo["stored"]).read_bytes()
    assert got.headers["x-content-type-options"] == "nosniff"
    assert got.headers["content-disposition"].startswith("inline;") and "anna.jpg" in got.headers[
        "content-disposition"]
    assert got.headers["content-security-policy"].startswith("sandbox")
    pdf = _get(server, f"/file/{_file(world, 'lease.pdf')['sha']}")
    assert pdf.status_code == 200 and pdf.headers["content-type"] == "application/pdf"
    assert pdf.content.startswith(b"%PDF") and "sandbox" not in pdf.headers["content-security-policy"]
    csv = _get(server, f"/file/{_file(world, 'runs.csv')['sha']}")
    assert csv.headers["content-type"] == "text/plain; charset=utf-8" and csv.text.startswith("month,km")
    assert csv.headers["content-security-policy"].startswith("sandbox")
    unknown = "0" * 64
    for path in (f"/file/{unknown}", f"/file/{photo['sha'].upper()}", "/file/..%2F..%2Fchat.json",
                 "/file/notes.docx", f"/file/{photo['sha']}%00", f"/file/{photo['stored']}"):
        assert _get(server, path).status_code == 404, path


def _mcp(world: MemoryGraph, tool: str, args: dict[str, Any]) -> Any:
    embedder = text_embedder(world.settings)
    service = McpService(world.settings, world, embedder_factory=lambda: embedder)

    async def call() -> Any:
        async with Client(build_server(service)) as client:
            return await client.call_tool(tool, args)

    return anyio.run(call)


def _json(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_mcp_returns_file_references_and_surrogate_text(world: MemoryGraph) -> None:
    pdf = _file(world, "lease.pdf")["sha"]
    found = _json(_mcp(world, "search_memory", {"query": "monthly rent lease", "videos": [SOURCE], "mode": "node"}))
    cited = [m for c in found["clips"] for m in c["memories"] if m.get("files")]
    assert cited, found
    refs = {f["sha256"]: f for m in cited for f in m["files"]}
    assert pdf in refs and refs[pdf]["name"] == "lease.pdf" and refs[pdf]["kind"] == "document"
    assert refs[pdf]["shared_at"].startswith("2024-05-01")
    clip = _json(_mcp(world, "fetch_clip", {"video": SOURCE, "clip": 0}))
    shared = [m for m in clip["clips"][0]["memories"] if m["text"].startswith("Ann")
              and any(f["name"] == "runs.csv" for f in m.get("files", []))]
    assert shared, clip  # the sharing turn's memory carries what it shared

    text = _json(_mcp(world, "file_text", {"sha256": pdf}))
    assert text["file"]["name"] == "lease.pdf" and text["file"]["mime"] == "application/pdf"
    assert [s["turn_id"] for s in text["shares"]] == ["t2"]
    assert any("Monthly rent: 1200 EUR" in s["text"] and "page 2" in s["text"] for s in text["surrogates"])
    assert text["total_surrogates"] == len(text["surrogates"]) and not text["truncated"]
    one = _json(_mcp(world, "file_text", {"sha256": pdf, "limit": 1}))
    assert len(one["surrogates"]) == 1 and one["truncated"] == (text["total_surrogates"] > 1)
    photo = _json(_mcp(world, "file_text", {"sha256": _file(world, "anna.jpg")["sha"]}))
    assert re.search(r"faces: <character_\d+>", photo["surrogates"][0]["text"]), photo
    assert "<face_" not in photo["surrogates"][0]["text"]
    for bad in ("../../etc/passwd", "0" * 64):
        result = _mcp(world, "file_text", {"sha256": bad})
        assert result.is_error and "\n" not in result.content[0].text, bad


def test_the_explorer_shows_a_session_with_files_in_chromium(server: str, world: MemoryGraph) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            page.goto(f"{server}/?token={TOKEN}")
            page.goto(f"{server}/clip/{SOURCE}/0")
            page.wait_for_load_state("networkidle")
            assert page.locator("#files figure.file").count() == 4
            assert page.locator("svg.photo rect.facebox").count() == 2
            # the photos really load (an <image> inside the SVG fetched from /file/<sha256>)
            loaded = page.evaluate("""async () => Promise.all([...document.querySelectorAll('svg.photo image')]
                .map(async i => (await fetch(i.getAttribute('href'))).status))""")
            assert loaded == [200, 200]
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "session-files.png"), full_page=True)
            assert errors == []
        finally:
            browser.close()


def _crop_path(world: MemoryGraph, key: str) -> Path:
    """A crop's file: the graph names it by storage key (m3graph.storage), a path under the data directory."""
    assert not key.startswith(("/", "file:")), key
    return world.settings.data_dir / key


def test_deleting_a_character_keeps_the_photo_but_not_their_face(server: str, world: MemoryGraph) -> None:
    """Runs last in this module: it deletes person_02's character."""
    bruno, anna = _file(world, "bruno.jpg"), _file(world, "anna.jpg")
    (face,) = _faces_of(world, bruno["sha"])
    (kept,) = _faces_of(world, anna["sha"])
    crop = _crop_path(world, face["crop"])
    assert crop.is_file() and f"<face_{face['face']}>" in _surrogate(world, bruno["sha"])

    summary = world.delete_character(face["char"])
    assert summary["photos_untagged"] == 1, summary
    assert not crop.exists()  # the crop is biometric data: gone
    assert rows(world, "MATCH (e:Face {entity_id: $id}) RETURN e", id=face["face"]) == []
    assert _faces_of(world, bruno["sha"]) == []
    text = _surrogate(world, bruno["sha"])
    assert "<face_" not in text and "faces:" not in text and "1 face" in text  # the photo, not the person
    assert rows(world, "MATCH (m:Memory)-[:DESCRIBES]->(:File {sha256: $sha}) MATCH (m)-[:MENTIONS]->(e) "
                       "RETURN e.entity_id AS id", sha=bruno["sha"]) == [
        {"id": r["id"]} for r in rows(world, "MATCH (s:Speaker) RETURN s.entity_id AS id")]  # only Ann remains
    assert (world.settings.data_dir / bruno["stored"]).is_file()  # the session still holds the photo
    assert _get(server, f"/file/{bruno['sha']}").status_code == 200
    assert _faces_of(world, anna["sha"]) == [kept] and _crop_path(world, kept["crop"]).is_file()
    page = _get(server, f"/clip/{SOURCE}/0").text
    assert f'data-face="{face["face"]}"' not in page and f'data-face="{kept["face"]}"' in page
