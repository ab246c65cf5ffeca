"""A person in a photo shared in a chat is the same character as the person seen in a generated video (issue 23,
"Done when"), on the real Neo4j through the real video pipeline and the offline face models.

The video is generated at test time the way the labelled video is (m3graph/devkit/testmedia's renderer): one 30-s
clip showing one photo of person_01 (img4.jpg) over silence. Then a conversation shares two *other* photos: img1.jpg
(person_01 again) and img26.jpg (person_02). The photos are the shared identity set in ../shared/data/identity
(test-only: read from there, copied only into the test's temporary folders).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from m3graph.devkit.testmedia import CLIP_SECONDS, SR, Shot, VideoSpec, _video, _write_wav  # noqa: E402
from m3graph.embedding import text_embedder  # noqa: E402
from m3graph.graphdb.store import MemoryGraph  # noqa: E402
from m3graph.ingest.chat.formats import load_conversation  # noqa: E402
from m3graph.ingest.chat.ingest import ingest_conversation  # noqa: E402
from m3graph.ingest.pipeline import ingest_video_inprocess  # noqa: E402
from tests.helpers.graph import perception_graph, rows, wipe  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FACES = REPO.parent / "shared" / "data" / "identity" / "faces"
VIDEO, CHAT = "anna-video", "anna-chat"


def _one_person_video(photo: Path, work: Path) -> Path:
    """30 s of one photo, silent audio, encoded like the test media."""
    for tool in ("ffmpeg", "ffprobe"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is needed to generate the test video")
    wav, out = work / "silence.wav", work / f"{VIDEO}.mp4"
    _write_wav(wav, np.zeros(round(CLIP_SECONDS * SR), dtype=np.int16))
    spec = VideoSpec(VIDEO, CLIP_SECONDS, [Shot(0.0, CLIP_SECONDS, ["P0"], ["p0.jpg"])], [])
    _video(spec, {"p0.jpg": photo}, wav, out, work)
    return out


def _photo_face(g: MemoryGraph, name: str) -> tuple[int, int]:
    (row,) = rows(g, "MATCH (:Clip {video_id: $v})-[:HAS_FILE {name: $name}]->(f:File) "
                     "MATCH (o:FaceObs {file_sha256: f.sha256})-[:OF]->(e:Face)-[:IS]->(c:Character) "
                     "RETURN e.entity_id AS face, c.char_id AS char", v=CHAT, name=name)
    return int(row["face"]), int(row["char"])


def test_a_photo_of_someone_seen_in_a_video_joins_their_character(memory_graph: MemoryGraph,
                                                                   tmp_path: Path) -> None:
    if not FACES.is_dir():
        pytest.fail(f"the shared identity set is missing: {FACES} (part of the project's checkout)")
    wipe(memory_graph)
    g = perception_graph(memory_graph, tmp_path / "data")
    embedder = text_embedder(g.settings)
    try:
        work = tmp_path / "video"
        work.mkdir()
        ingest_video_inprocess(g, embedder, _one_person_video(FACES / "img4.jpg", work), VIDEO)
        seen = rows(g, "MATCH (o:FaceObs {video_id: $v})-[:OF]->(e:Face)-[:IS]->(c:Character) "
                       "RETURN DISTINCT e.entity_id AS face, c.char_id AS char", v=VIDEO)
        assert len(seen) == 1, seen  # one person on screen, one face entity
        video_face, video_char = seen[0]["face"], seen[0]["char"]

        conv = tmp_path / "conv"
        conv.mkdir()
        shutil.copyfile(FACES / "img1.jpg", conv / "anna.jpg")  # person_01, another photo than the video's
        shutil.copyfile(FACES / "img26.jpg", conv / "bruno.jpg")  # person_02
        data = {"source_id": CHAT, "sessions": [{"id": "s1", "started_at": "2024-05-01T09:00:00Z", "turns": [
            {"id": "t1", "speaker": "Ann", "text": "Anna at the lake", "files": ["anna.jpg"]},
            {"id": "t2", "speaker": "Ann", "text": "and Bruno", "files": ["bruno.jpg"]}]}]}
        (conv / "chat.json").write_text(json.dumps(data), encoding="utf-8")
        loaded, _ = load_conversation(conv / "chat.json")
        summary = ingest_conversation(g, loaded, embedder, files_root=conv)
        assert summary.files_refused == [] and summary.files == 2

        anna_face, anna_char = _photo_face(g, "anna.jpg")
        bruno_face, bruno_char = _photo_face(g, "bruno.jpg")
        assert (anna_face, anna_char) == (video_face, video_char)  # the video's person, by face alone
        assert bruno_face != video_face and bruno_char != video_char
        # the photo's surrogate names the video's face: a search for the character finds the photo
        texts = rows(g, "MATCH (m:Memory)-[:MENTIONS]->(:Face {entity_id: $id}) RETURN m.video_id AS v",
                     id=video_face)
        assert {r["v"] for r in texts} >= {CHAT}
    finally:
        wipe(memory_graph)
