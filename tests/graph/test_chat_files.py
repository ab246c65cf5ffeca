"""Files shared in conversations, against the real Neo4j: a conversation with a PDF, a CSV, an XLSX, a DOCX, an SVG
chart and a PNG photo ingests; the graph holds content-keyed File nodes, their stored copies and surrogate
memories citing the sharing turn; re-ingest is idempotent; each bad file is refused on its own while the rest is
ingested; deleting a session removes only the files no other session holds. Every file is generated here."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from m3graph.cli import main
from m3graph.embedding import TextEmbedder
from m3graph.graphdb.files import conversation_files
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import ChatFormatError
from tests.helpers.graph import rows, variant, with_settings
from tests.helpers.shared_files import (
    chart_svg,
    docx_file,
    encrypted_pdf,
    pdf_bytes,
    photo,
    xlsx,
    zip_bomb_xlsx,
)


@pytest.fixture
def fgraph(graph: MemoryGraph, tmp_path: Path) -> MemoryGraph:
    """The emptied store with its own data directory (the stored copies land under tmp_path/data)."""
    return with_settings(graph, graph.settings.model_copy(update={"data_dir": tmp_path / "data"}))


def _conv(root: Path, sessions: list[list[dict[str, Any]]], source: str = "files-chat") -> Path:
    data = {"source_id": source, "speakers": ["Ann", "Bob"],
            "sessions": [{"id": f"s{i + 1}", "started_at": f"2024-05-0{i + 1}T09:00:00Z", "turns": turns}
                         for i, turns in enumerate(sessions)]}
    path = root / "chat.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def _ingest(g: MemoryGraph, path: Path, embedder: TextEmbedder, root: Path | None = None) -> Any:
    conv, _ = load_conversation(path)
    return ingest_conversation(g, conv, embedder, files_root=root or path.parent)


def _files(g: MemoryGraph) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in rows(g, "MATCH (c:Clip)-[h:HAS_FILE]->(f:File) RETURN h.name AS name, "
                                          "f.sha256 AS sha, f.kind AS kind, f.mime AS mime, f.size AS size, "
                                          "f.stored AS stored, h.turn_id AS turn_id, c.clip_index AS clip")}


def _surrogates(g: MemoryGraph, sha: str) -> list[dict[str, Any]]:
    return rows(g, "MATCH (m:Memory {file_sha256: $sha})-[:DESCRIBES]->(:File {sha256: $sha}) "
                   "RETURN m.text AS text, m.source_ids AS source_ids, m.kind AS kind ORDER BY m.memory_id", sha=sha)


def _good_files(root: Path) -> None:
    (root / "docs").mkdir()
    (root / "docs" / "contract.pdf").write_bytes(pdf_bytes([["Lease contract between Ann and Bob"],
                                                            ["Monthly rent: 1200 EUR", "Signed <face_3> here"]]))
    (root / "runs.csv").write_text("month,km\nMarch,42\nApril,55\nMay,31\n", encoding="utf-8")
    xlsx(root / "budget.xlsx", [["item", "eur"], ["flights", 320], ["hotel", 540]])
    docx_file(root / "plan.docx", "Trip plan", ["We leave for Lisbon on Friday."], [["day", "city"], ["Sat", "Porto"]])
    chart_svg(root / "chart.svg", {"Jan": 40, "Feb": 90, "Mar": 60})
    photo(root / "anna.png")


GOOD_TURNS = [
    {"id": "t1", "speaker": "Ann", "text": "Here is the lease.", "files": [{"path": "docs/contract.pdf"}]},
    {"id": "t2", "speaker": "Bob", "text": "", "files": ["runs.csv", {"path": "budget.xlsx", "name": "Budget"}]},
    {"id": "t3", "speaker": "Ann", "text": "Plan and chart.", "files": ["plan.docx", "chart.svg"]},
    {"id": "t4", "speaker": "Bob", "text": "A photo of Anna", "files": [{"path": "anna.png", "kind": "image"}]},
]


def test_files_become_nodes_copies_and_surrogates(fgraph: MemoryGraph, embedder: TextEmbedder,
                                                  tmp_path: Path) -> None:
    root = tmp_path / "conv"
    root.mkdir()
    _good_files(root)
    path = _conv(root, [GOOD_TURNS])
    summary = _ingest(fgraph, path, embedder)
    assert summary.files_refused == []
    assert summary.files == 6
    files = _files(fgraph)
    assert set(files) == {"contract.pdf", "runs.csv", "Budget", "plan.docx", "chart.svg", "anna.png"}
    assert {n: f["kind"] for n, f in files.items()} == {
        "contract.pdf": "document", "runs.csv": "chart", "Budget": "chart", "plan.docx": "document",
        "chart.svg": "chart", "anna.png": "image"}
    for name, f in files.items():  # the stored copy is the file's bytes, at its content address
        stored = fgraph.settings.data_dir / f["stored"]
        assert hashlib.sha256(stored.read_bytes()).hexdigest() == f["sha"], name
        assert f["size"] == stored.stat().st_size
    pdf = _surrogates(fgraph, files["contract.pdf"]["sha"])
    assert [s["source_ids"] for s in pdf] == [["t1"], ["t1"]]
    assert "page 2" in pdf[1]["text"] and "1200 EUR" in pdf[1]["text"]
    # A tag written in the document is text: escaped, and no MENTIONS edge to an entity 3.
    assert "‹face_3›" in pdf[1]["text"] and "<face_3>" not in pdf[1]["text"]
    assert rows(fgraph, "MATCH (m:Memory {file_sha256: $sha})-[:MENTIONS]->(e) WHERE e.entity_id = 3 "
                        "RETURN count(*) AS n", sha=files["contract.pdf"]["sha"])[0]["n"] == 0
    csv_text = " ".join(s["text"] for s in _surrogates(fgraph, files["runs.csv"]["sha"]))
    assert "row 2: month=April, km=55" in csv_text and "km peaks in April (55), lowest in May (31)" in csv_text
    xlsx_text = " ".join(s["text"] for s in _surrogates(fgraph, files["Budget"]["sha"]))
    assert "sheet Runs" in xlsx_text and "item=hotel, eur=540" in xlsx_text
    docx_text = " ".join(s["text"] for s in _surrogates(fgraph, files["plan.docx"]["sha"]))
    assert "Trip plan" in docx_text and "day=Sat, city=Porto" in docx_text
    svg_text = _surrogates(fgraph, files["chart.svg"]["sha"])[0]["text"]
    assert "Feb | 90" in " ".join(s["text"] for s in _surrogates(fgraph, files["chart.svg"]["sha"]))
    assert "chart values: Kilometres run per month peaks in February (90), lowest in January (40)" in svg_text
    image = _surrogates(fgraph, files["anna.png"]["sha"])
    assert len(image) == 1 and "photo 160x120" in image[0]["text"] and "blue" in image[0]["text"]
    assert image[0]["source_ids"] == ["t4"]
    # The sharing turn's memory SHARED each of its files; the surrogate names its speaker as a tagged speaker.
    shared = rows(fgraph, "MATCH (m:Memory)-[r:SHARED]->(f:File) RETURN r.turn_id AS turn, count(f) AS n "
                          "ORDER BY turn")
    assert [(r["turn"], r["n"]) for r in shared] == [("t1", 1), ("t2", 2), ("t3", 2), ("t4", 1)]
    assert "shared by Ann <speaker_" in pdf[0]["text"]
    listed = conversation_files(fgraph.ex, "files-chat")
    assert [(r["turn_id"], r["name"], r["surrogates"]) for r in listed][:2] == [("t1", "contract.pdf", 2),
                                                                                ("t2", "Budget", 2)]

    again = _ingest(fgraph, path, embedder)  # idempotent: the session is stored, nothing is written
    assert again.sessions_written == [] and again.files == 0
    assert len(_files(fgraph)) == 6
    assert rows(fgraph, "MATCH (f:File) RETURN count(f) AS n")[0]["n"] == 6


def test_same_bytes_link_one_node_and_delete_keeps_files_still_held(fgraph: MemoryGraph, embedder: TextEmbedder,
                                                                    tmp_path: Path) -> None:
    root = tmp_path / "conv"
    root.mkdir()
    (root / "receipt.txt").write_text("Coffee 3.20 EUR\nTotal 3.20 EUR\n", encoding="utf-8")
    (root / "copy-of-receipt.txt").write_bytes((root / "receipt.txt").read_bytes())
    (root / "notes.md").write_text("# Shopping\n\nmilk, eggs\n\n## Later\n\nbread\n", encoding="utf-8")
    path = _conv(root, [[{"speaker": "Ann", "text": "receipt", "files": ["receipt.txt", "notes.md"]}],
                        [{"speaker": "Bob", "text": "same one", "files": ["copy-of-receipt.txt"]}]])
    _ingest(fgraph, path, embedder)
    nodes = rows(fgraph, "MATCH (f:File) RETURN f.sha256 AS sha, f.stored AS stored, "
                         "COUNT { (f)<-[:HAS_FILE]-() } AS held ORDER BY held DESC")
    assert len(nodes) == 2 and nodes[0]["held"] == 2  # the receipt shared twice is one node, held by two sessions
    receipt, notes = nodes[0], nodes[1]
    md = _surrogates(fgraph, notes["sha"])
    assert [m["text"].split("]")[0] for m in md] == ["[file notes.md, document, Shopping, shared by Ann <speaker_1>",
                                                     "[file notes.md, document, Shopping > Later, shared by Ann "
                                                     "<speaker_1>"]
    fgraph.delete_clip("files-chat", 0)  # the first session: notes.md goes, the receipt is still held
    left = rows(fgraph, "MATCH (f:File) RETURN f.sha256 AS sha")
    assert [r["sha"] for r in left] == [receipt["sha"]]
    assert not (fgraph.settings.data_dir / notes["stored"]).exists()
    assert (fgraph.settings.data_dir / receipt["stored"]).exists()
    fgraph.delete_video("files-chat")
    assert rows(fgraph, "MATCH (f:File) RETURN count(f) AS n")[0]["n"] == 0
    assert not (fgraph.settings.data_dir / receipt["stored"]).exists()


def test_bad_files_are_refused_one_by_one(fgraph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> None:
    root = tmp_path / "conv"
    root.mkdir()
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 9 0 R >>\n garbage" * 3)
    encrypted_pdf(root / "locked.pdf")
    (root / "fake.jpg").write_text("this is not a picture at all", encoding="utf-8")
    (root / "big.txt").write_text("x" * 40_000, encoding="utf-8")
    zip_bomb_xlsx(root / "bomb.xlsx")
    zip_bomb_xlsx(root / "bomb.docx", part="word/document.xml")
    (root / "torn.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + os.urandom(200))
    (tmp_path / "secret.txt").write_text("outside the root", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    (root / "ok.txt").write_text("The good file: the meeting moved to Thursday.", encoding="utf-8")
    bad = ["broken.pdf", "locked.pdf", "fake.jpg", "torn.png", "big.txt", "bomb.xlsx", "bomb.docx",
           "../secret.txt", "link.txt",
           str(tmp_path / "secret.txt"), "missing.pdf"]
    path = _conv(root, [[{"id": "b1", "speaker": "Ann", "text": "lots of files", "files": bad},
                         {"id": "b2", "speaker": "Bob", "text": "and a good one", "files": ["ok.txt"]}]])
    small = with_settings(fgraph, variant(fgraph.settings, files={"max_file_mb": 0.02}))  # 20 KB cap
    summary = _ingest(small, path, embedder)
    reasons = {line.split(": file ", 1)[1].split(":", 1)[0]: line for line in summary.files_refused}
    assert sorted(reasons) == sorted(bad)
    assert "corrupt PDF" in reasons["broken.pdf"]
    assert "password-protected PDF" in reasons["locked.pdf"]
    assert "not one" in reasons["fake.jpg"] and "text/plain" in reasons["fake.jpg"]
    assert "files.max_file_mb" in reasons["big.txt"]
    assert "zip bomb" in reasons["bomb.xlsx"] and "zip bomb" in reasons["bomb.docx"]
    assert "an image that cannot be decoded" in reasons["torn.png"]
    for escape in ("../secret.txt", "link.txt"):
        assert "outside the allowed files root" in reasons[escape]
    assert "absolute path" in reasons[str(tmp_path / "secret.txt")]
    assert "no such file" in reasons["missing.pdf"]
    # The rest is ingested: both turns, the good file and its surrogate; no refused file left a node or a copy.
    assert summary.sessions_written == [0] and summary.turns == 2 and summary.files == 1
    assert list(_files(small)) == ["ok.txt"]
    stored = [p for p in (small.settings.data_dir / "files").rglob("*") if p.is_file()]
    assert len(stored) == 1
    turns = rows(small, "MATCH (m:Memory) WHERE m.file_sha256 IS NULL RETURN m.text AS text ORDER BY m.memory_id")
    assert "[shares a file: broken.pdf]" in turns[0]["text"] and "Thursday" not in turns[0]["text"]


def test_folder_layout_and_cli_files_root(fgraph: MemoryGraph, tmp_path: Path) -> None:
    conv = tmp_path / "trip"
    s1, s2 = conv / "2024-05-01_session-1", conv / "2024-05-08"
    (s2 / "photos").mkdir(parents=True)
    s1.mkdir()
    (s1 / "chat.txt").write_text("Ann: the receipt [file: receipt.txt]\nBob: thanks\n", encoding="utf-8")
    (s1 / "receipt.txt").write_text("Dinner 48 EUR", encoding="utf-8")
    (s2 / "chat.txt").write_text("# photos\nAnn: [file: photos/lake.png]\nBob: nice [file: ../../escape.txt]\n",
                                 encoding="utf-8")
    photo(s2 / "photos" / "lake.png", colour=(20, 160, 40))
    (tmp_path / "escape.txt").write_text("not yours", encoding="utf-8")
    loaded, _ = load_conversation(conv)
    assert loaded.source_id == "trip" and [s.session_key for s in loaded.sessions] == ["2024-05-01_session-1",
                                                                                      "2024-05-08"]
    assert loaded.sessions[1].started_at is not None and loaded.sessions[1].started_at.day == 8
    assert [f.path for f in loaded.sessions[1].turns[0].files] == ["2024-05-08/photos/lake.png"]
    result = CliRunner().invoke(main, ["ingest-chat", str(conv), "--json"], obj=fgraph.settings)
    assert result.exit_code == 0, result.output
    assert "escape.txt: outside the allowed files root" in result.stderr
    assert sorted(_files(fgraph)) == ["lake.png", "receipt.txt"]
    # --files-root narrower than the conversation: every file is refused, the turns are still stored.
    other = _conv(tmp_path, [[{"speaker": "Ann", "text": "x", "files": ["trip/2024-05-01_session-1/receipt.txt"]}]],
                  source="rooted")
    narrow = tmp_path / "empty"
    narrow.mkdir()
    result = CliRunner().invoke(main, ["ingest-chat", str(other), "--files-root", str(narrow)],
                                obj=fgraph.settings)
    assert result.exit_code == 0, result.output
    assert "no such file under the files root" in result.stderr
    assert rows(fgraph, "MATCH (m:Memory {video_id: 'rooted', kind: 'episodic'}) RETURN count(m) AS n")[0]["n"] == 1


def test_malformed_files_entries_are_format_errors(tmp_path: Path) -> None:
    path = _conv(tmp_path, [[{"speaker": "Ann", "text": "x", "files": [{"path": "a.pdf", "kind": "movie"}]}]])
    with pytest.raises(ChatFormatError, match="'kind' must be one of"):
        load_conversation(path)
    path = _conv(tmp_path, [[{"speaker": "Ann", "text": "x", "files": [{"pth": "a.pdf"}]}]])
    with pytest.raises(ChatFormatError, match="unknown key 'pth'"):
        load_conversation(path)
