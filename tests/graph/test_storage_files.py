"""Files shared in chats with media in an object store (moto's S3 server, started by the suite): the stored copy
goes into the bucket under the same content key as on disk, another host (an empty data directory) still gets it
through `held_copy`, and deleting the conversation removes the object."""

from __future__ import annotations

import json
from pathlib import Path

from m3graph.embedding import text_embedder
from m3graph.graphdb.files import conversation_files, held_copy
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from tests.helpers.graph import with_settings
from tests.helpers.object_store import S3Server
from tests.helpers.shared_files import pdf_bytes


def test_a_shared_file_lives_in_the_bucket_and_goes_with_its_conversation(
        graph: MemoryGraph, s3_server: S3Server, tmp_path: Path) -> None:
    bucket = s3_server.make_bucket("shared-files")
    host_a = with_settings(graph, s3_server.settings(graph.settings, bucket, tmp_path / "host-a", "m3"))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "receipt.pdf").write_bytes(pdf_bytes([["Total 42.17 EUR"]]))
    conv_path = tmp_path / "in" / "chat.json"
    conv_path.write_text(json.dumps({"source_id": "s3-files", "speakers": ["Ann", "Bob"], "sessions": [
        {"id": "s1", "started_at": "2024-05-01T09:00:00Z", "turns": [
            {"id": "t1", "speaker": "Ann", "text": "the receipt", "files": [{"path": "receipt.pdf"}]}]}]}))
    conv, _ = load_conversation(conv_path)
    ingest_conversation(host_a, conv, text_embedder(host_a.settings), files_root=conv_path.parent)

    stored = conversation_files(host_a.ex, "s3-files")
    assert len(stored) == 1
    key = stored[0]["stored"]
    assert f"m3/{key}" in s3_server.keys(bucket, "m3/files/")

    host_b = with_settings(graph, s3_server.settings(graph.settings, bucket, tmp_path / "host-b", "m3"))
    found = held_copy(host_b.ex, host_b.settings, stored[0]["sha256"])
    assert found is not None and found[0].read_bytes() == (tmp_path / "in" / "receipt.pdf").read_bytes()

    host_a.delete_video("s3-files")
    assert s3_server.keys(bucket, "m3/files/") == []
