"""Faces named by the chat, against the real Neo4j: a photo shared with "This is my sister Lena." records a name
fact about its one face; a later, unnamed photo of the same person resolves to that face and its surrogate reads
"(Lena)"; a photo whose turn says "me and ..." names nobody. Face detection is replaced by fixed embeddings per
photo (the detector is not what is tested here: docs/conversations.md "Files" covers it); the graph is real."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from m3graph.embedding import TextEmbedder
from m3graph.graphdb import facts
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat import attachments
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from tests.helpers.graph import face_dim, near, rows, unit, with_settings
from tests.helpers.shared_files import photo, stand_in_photo_faces


def _surrogate(g: MemoryGraph, name: str) -> str:
    found = rows(g, "MATCH (m:Memory)-[:DESCRIBES]->(:File)<-[h:HAS_FILE]-(:Clip) WHERE h.name = $name "
                    "RETURN m.text AS text", name=name)
    assert len(found) == 1, name
    return str(found[0]["text"])


def test_a_face_named_in_the_chat_names_its_later_photos(graph: MemoryGraph, embedder: TextEmbedder,
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    g = with_settings(graph, graph.settings.model_copy(update={"data_dir": tmp_path / "data"}))
    root = tmp_path / "conv"
    root.mkdir()
    shots = {"lena.png": (200, 40, 40), "lena2.png": (40, 200, 40), "pair.png": (40, 40, 200),
             "marco.png": (90, 90, 90)}
    sha = {n: hashlib.sha256(photo(root / n, colour=c).read_bytes()).hexdigest() for n, c in shots.items()}
    gen = np.random.default_rng(23)
    lena, marco = unit(face_dim(g), gen), unit(face_dim(g), gen)
    monkeypatch.setattr(attachments, "photo_faces", stand_in_photo_faces({
        sha["lena.png"]: [near(lena, 0.97, gen)], sha["lena2.png"]: [near(lena, 0.97, gen)],
        sha["marco.png"]: [near(marco, 0.97, gen)], sha["pair.png"]: [near(marco, 0.97, gen)]}))
    data = {"source_id": "named-photos", "speakers": ["Ann", "Bob"], "sessions": [
        {"id": "s1", "started_at": "2024-05-01T09:00:00Z", "turns": [
            {"id": "t1", "speaker": "Ann", "text": "This is my sister Lena.", "files": ["lena.png"]},
            {"id": "t2", "speaker": "Ann", "text": "Me and Marco at the lake!", "files": ["marco.png"]}]},
        {"id": "s2", "started_at": "2024-05-08T09:00:00Z", "turns": [
            {"id": "t3", "speaker": "Ann", "text": "Look who I ran into at the bookshop!", "files": ["lena2.png"]},
            {"id": "t4", "speaker": "Bob", "text": "This is Bob.", "files": ["pair.png"]}]}]}
    path = root / "chat.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    conv, _ = load_conversation(path)
    summary = ingest_conversation(g, conv, embedder, files_root=root)
    assert summary.files_refused == [] and summary.files == 4

    named = rows(g, "MATCH (m:Memory {kind: 'semantic'})-[:MENTIONS]->(f:Face) "
                    "RETURN m.text AS text, m.slot_key AS slot, m.source_ids AS src, f.entity_id AS face")
    assert len(named) == 1, named  # only t1 names a face: t2 says "me", t4 names a speaker
    face = named[0]["face"]
    assert named[0]["text"] == f"<face_{face}>'s name is Lena." and named[0]["slot"] == f"face_{face} · name"
    assert named[0]["src"] == ["t1"]
    char = rows(g, "MATCH (:Face {entity_id: $f})-[:IS]->(c:Character) RETURN c.char_id AS c", f=face)[0]["c"]
    assert facts.character_names(g.ex, [char]) == {char: "Lena"}

    assert f"faces: <face_{face}> (Lena)" in _surrogate(g, "lena.png")  # named in its own turn
    assert f"faces: <face_{face}> (Lena)" in _surrogate(g, "lena2.png")  # the same face, a week later, unnamed
    turn = rows(g, "MATCH (m:Memory)-[:SHARED]->(:File)<-[h:HAS_FILE]-(:Clip) WHERE h.name = 'lena2.png' "
                   "RETURN m.text AS text")[0]["text"]  # the sharing turn says who its photo shows
    assert turn.endswith(f"[shares a file: lena2.png] [in the photo: <face_{face}> (Lena)]"), turn
    marco_turn = rows(g, "MATCH (m:Memory)-[:SHARED]->(:File)<-[h:HAS_FILE]-(:Clip) WHERE h.name = 'marco.png' "
                         "RETURN m.text AS text")[0]["text"]
    assert "[in the photo" not in marco_turn
    for unnamed in ("marco.png", "pair.png"):
        text = _surrogate(g, unnamed)
        assert "faces: <face_" in text and "(" not in text.split("faces:")[1], text
