"""Faces in photos shared in a conversation resolve to persistent Face entities, through the video path's detector,
embedder and identity resolution (a photo is one frame), on the real Neo4j with the offline face models.

Two different photos of one person shared in two sessions name the same `<face_N>`; a photo of someone else names
another; deleting the conversation deletes the faces with their evidence. The photos are the labelled identity set
in ../shared/data/identity/faces (test-only: read from there, copied only into the test's temporary folder).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest

from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from tests.helpers.graph import perception_graph, rows

FACES = Path(__file__).resolve().parents[3] / "shared" / "data" / "identity" / "faces"
_TAG = re.compile(r"<face_(\d+)>")


def _tags(g: MemoryGraph, name: str) -> set[int]:
    found = rows(g, "MATCH (:Clip)-[h:HAS_FILE {name: $name}]->(f:File)<-[:DESCRIBES]-(m:Memory) "
                    "RETURN m.text AS text", name=name)
    assert len(found) == 1, name
    return {int(n) for n in _TAG.findall(found[0]["text"])}


@pytest.mark.skipif(not FACES.is_dir(), reason="the labelled identity photos (../shared/data/identity) are absent")
def test_the_same_person_in_two_photos_is_one_face(graph: MemoryGraph, tmp_path: Path) -> None:
    g = perception_graph(graph, tmp_path / "data")
    conv = tmp_path / "conv"
    conv.mkdir()
    for source, target in (("img1.jpg", "anna.jpg"), ("img2.jpg", "anna-again.jpg"), ("img26.jpg", "other.jpg")):
        shutil.copyfile(FACES / source, conv / target)  # img1/img2: person_01, img26: person_02 (identities.csv)
    data = {"source_id": "photo-chat", "sessions": [
        {"id": "s1", "started_at": "2024-05-01T09:00:00Z",
         "turns": [{"id": "p1", "speaker": "Ann", "text": "me at the lake", "files": ["anna.jpg"]}]},
        {"id": "s2", "started_at": "2024-05-09T09:00:00Z",
         "turns": [{"id": "p2", "speaker": "Ann", "text": "me again, and my colleague",
                    "files": ["anna-again.jpg", "other.jpg"]}]}]}
    (conv / "chat.json").write_text(json.dumps(data), encoding="utf-8")
    loaded, _ = load_conversation(conv / "chat.json")
    summary = ingest_conversation(g, loaded, text_embedder(g.settings), files_root=conv)
    assert summary.files_refused == [] and summary.files == 3

    first, again, other = _tags(g, "anna.jpg"), _tags(g, "anna-again.jpg"), _tags(g, "other.jpg")
    assert first and again and other
    assert first & again, (first, again)  # one persistent Face across sessions
    assert not (first & other) and not (again & other)
    obs = rows(g, "MATCH (o:FaceObs)-[:IN_CLIP]->(c:Clip {video_id: 'photo-chat'}) RETURN count(o) AS n")[0]["n"]
    assert obs >= 3
    crops = [p for p in (g.settings.data_dir / "videos").rglob("*.jpg")]
    assert len(crops) >= 3  # the faces' crops live with the session clip (deleted with it)

    g.delete_video("photo-chat")
    assert rows(g, "MATCH (f:Face) RETURN count(f) AS n")[0]["n"] == 0
    assert rows(g, "MATCH (f:File) RETURN count(f) AS n")[0]["n"] == 0
