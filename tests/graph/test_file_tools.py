"""The reader's file tools against the real Neo4j (`reasoning.file_tools` through `MemoryTools.run`): listing a
conversation's files by type, order, date and name within the question's scope; a closer look at one page, at a
photo's faces with the names the chat gave them, and at one region of an image by OCR (Tesseract). Face
detection is replaced by fixed embeddings (as in test_photo_names); every file is generated here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from m3graph.embedding import TextEmbedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat import attachments
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.reasoning.control import READER_SYSTEM, Controller
from m3graph.reasoning.file_tools import READER_HINT, files_in_scope, parse_file_query
from m3graph.reasoning.memory_tools import MemoryTools
from tests.helpers.chat_doubles import ScriptedModel
from tests.helpers.graph import face_dim, near, unit, with_settings
from tests.helpers.shared_files import pdf_bytes, photo, stand_in_photo_faces


def _sign(path: Path) -> Path:
    from PIL import Image, ImageDraw, ImageFont

    im = Image.new("RGB", (800, 300), "white")
    draw = ImageDraw.Draw(im)
    font = ImageFont.load_default(size=48)
    draw.text((20, 20), "TOTAL 42 EUR", fill="black", font=font)
    draw.text((20, 200), "THANK YOU", fill="black", font=font)
    im.save(path)
    return path


@pytest.fixture
def conv(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
         ) -> tuple[MemoryGraph, str]:
    g = with_settings(graph, graph.settings.model_copy(update={"data_dir": tmp_path / "data"}))
    root = tmp_path / "conv"
    root.mkdir()
    (root / "contract.pdf").write_bytes(pdf_bytes([["Lease contract"], ["Deposit: 900 EUR"]]))
    (root / "runs.csv").write_text("month,km\nMarch,42\nApril,55\n", encoding="utf-8")
    lena = photo(root / "lena.png", colour=(200, 30, 30))
    _sign(root / "sign.png")
    gen = np.random.default_rng(5)
    sha = hashlib.sha256(lena.read_bytes()).hexdigest()
    faces = stand_in_photo_faces({sha: [near(unit(face_dim(g), gen), 0.97, gen)]})
    monkeypatch.setattr(attachments, "photo_faces", faces)
    data = {"source_id": "tools-chat", "speakers": ["Ann", "Bob"], "sessions": [
        {"id": "s1", "started_at": "2024-05-01T09:00:00Z", "turns": [
            {"id": "t1", "speaker": "Ann", "text": "The lease, before the trip.", "files": ["contract.pdf"]},
            {"id": "t2", "speaker": "Ann", "text": "This is my sister Lena.", "files": ["lena.png"]}]},
        {"id": "s2", "started_at": "2024-05-08T09:00:00Z", "turns": [
            {"id": "t3", "speaker": "Bob", "text": "My runs", "files": ["runs.csv"]},
            {"id": "t4", "speaker": "Bob", "text": "The bill", "files": ["sign.png"]}]}]}
    path = root / "chat.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    loaded, _ = load_conversation(path)
    assert ingest_conversation(g, loaded, embedder, files_root=root).files_refused == []
    return g, "tools-chat"


def test_parse_file_query_allow_lists() -> None:
    q = parse_file_query("the first PDF after 2024-05-01 name:lease")
    assert q.mimes == ["application/pdf"] and q.order == "first" and q.name == "lease"
    assert q.since is not None and q.since.day == 2 and q.until is None
    assert parse_file_query("photos on 2024-05-08").kinds == ["image"]
    assert parse_file_query("'); MATCH (n) DETACH DELETE n //").kinds is None  # words it does not know: ignored


def test_list_files_by_type_order_date_and_scope(conv: tuple[MemoryGraph, str], embedder: TextEmbedder) -> None:
    g, source = conv
    tools = MemoryTools(g.search, embedder, g.settings, [source])
    pdfs = tools.run("list_files", "pdf")
    assert list(pdfs.knowledge) == ["CLIP_0"] and len(pdfs.knowledge["CLIP_0"]) == 1
    line = pdfs.knowledge["CLIP_0"][0]
    assert line.startswith("file contract.pdf (document, application/pdf") and "1 May 2024" in line
    assert "The lease, before the trip." in line  # the sharing turn is the evidence
    assert [ln.split()[1] for ln in tools.run("list_files", "spreadsheet").knowledge["CLIP_1"]] == ["runs.csv"]
    after = tools.run("list_files", "after 2024-05-02")
    assert list(after.knowledge) == ["CLIP_1"] and len(after.knowledge["CLIP_1"]) == 2
    assert tools.run("list_files", "last image").knowledge["CLIP_1"][0].startswith("file sign.png")
    assert tools.run("list_files", "first").knowledge["CLIP_0"][0].startswith("file contract.pdf")
    early = MemoryTools(g.search, embedder, g.settings, [source], before_clip=0)
    assert list(early.run("list_files", "").knowledge) == ["CLIP_0"]  # never a file shared after the question
    assert tools.run("list_files", "audio").fallback == "no shared file matches"


def test_look_at_file_page_faces_region(conv: tuple[MemoryGraph, str], embedder: TextEmbedder) -> None:
    g, source = conv
    tools = MemoryTools(g.search, embedder, g.settings, [source])
    page = tools.run("look_at_file", "contract.pdf page 2").knowledge["CLIP_0"]
    assert len(page) == 1 and "Deposit: 900 EUR" in page[0] and "Lease contract" not in page[0]
    whole = tools.run("look_at_file", "CONTRACT.pdf").knowledge["CLIP_0"]
    assert len(whole) == 2
    faces = tools.run("look_at_file", "lena.png faces").knowledge["CLIP_0"]
    assert len(faces) == 1 and faces[0].startswith("face in lena.png: <character_") and faces[0].endswith("(Lena)")
    region = tools.run("look_at_file", "sign.png region 0,0,800,120").knowledge["CLIP_1"][0]
    assert "TOTAL 42" in region and "THANK" not in region
    assert "not a picture" in tools.run("look_at_file", "runs.csv region 0,0,10,10").knowledge["CLIP_1"][0]
    early = MemoryTools(g.search, embedder, g.settings, [source], before_clip=0)
    assert early.run("look_at_file", "runs.csv").knowledge == {}  # shared after the question: not in scope
    assert "no file named" in (tools.run("look_at_file", "../../etc/passwd").fallback or "")
    short = tools.run("look_at_file", "contract.pdf")
    assert short.memories == 2


def test_the_controller_offers_and_runs_the_file_tools(conv: tuple[MemoryGraph, str], embedder: TextEmbedder) -> None:
    """Wired into the reader (`control.Controller`, tools mode): the hint is in the system prompt because files
    were shared, ``list_files: ...`` and ``look_at_file: ...`` run the tools instead of a search, and a repeated
    tool call falls back to whole-clip search as any repeated query does."""
    g, source = conv
    assert files_in_scope(g.search.ex, [source], None) and not files_in_scope(g.search.ex, ["no-such-src"], None)
    model = ScriptedModel(['{"answer": null, "next_query": "list_files: pdf"}',
                           '{"answer": null, "next_query": "look_at_file: lena.png faces"}',
                           '{"answer": null, "next_query": "LOOK_AT_FILE(lena.png faces)"}',
                           '{"answer": "Lena", "next_query": null}'])
    ctl = Controller(model, g, embedder, g.settings, mode="tools", rounds=5, prefetch=True)
    trace = ctl.answer("Who is in the photo Ann shared?", [source])
    assert trace.answer == "Lena" and trace.outcome == "answered"
    assert model.requests[0].messages[0].text == f"{READER_SYSTEM}\n{READER_HINT}"
    assert [r.action for r in trace.rounds] == ["search_node", "list_files", "look_at_file", "search_clip", "answer"]
    listed = model.requests[1].last_user
    assert listed.startswith('Search results for "list_files: pdf":') and "file contract.pdf (document" in listed
    faces = model.requests[2].last_user
    assert 'Search results for "look_at_file: lena.png faces":' in faces and "face in lena.png: <character_" in faces
    assert "(Lena)" in faces
    assert trace.rounds[3].note and "repeats" in trace.rounds[3].note


def test_a_file_tool_without_files_says_so_and_shows_the_hint(graph: MemoryGraph, embedder: TextEmbedder,
                                                              tmp_path: Path) -> None:
    """A conversation with no file keeps the plain prompt; a tool the reader names anyway runs, finds nothing, and
    the results say why and how the tools are called."""
    data = {"source_id": "tools-chat-plain", "speakers": ["Ann", "Bob"], "sessions": [
        {"id": "p1", "started_at": "2024-05-01T09:00:00Z", "turns": [
            {"id": "t1", "speaker": "Ann", "text": "I signed the lease for the flat today."}]}]}
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    loaded, _ = load_conversation(path)
    ingest_conversation(graph, loaded, embedder)
    model = ScriptedModel(['{"answer": null, "next_query": "list_files: pdf"}', '{"answer": null}'])
    ctl = Controller(model, graph, embedder, graph.settings, mode="tools", rounds=2, prefetch=True)
    trace = ctl.answer("Which PDF did Ann send with the lease?", ["tools-chat-plain"])
    assert model.requests[0].messages[0].text == READER_SYSTEM
    assert [r.action for r in trace.rounds] == ["search_node", "list_files", "answer"]
    assert trace.outcome == "abstained"
    shown = model.requests[1].last_user
    assert "found nothing new (no shared file matches; " in shown and READER_HINT in shown
