"""A generated video ingested with media in a real S3-compatible store (moto's server mode, started by the suite):
the bucket holds everything other components need, the local data directory only scratch, the graph only keys;
a second "host" with its own empty data directory memorizes from the store alone; the explorer streams a crop and
a byte range of a cut through the product; deleting the video removes its objects."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from mcp.server.mcpserver.exceptions import ToolError

from m3graph.devkit.testmedia import Manifest
from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.pipeline import ingest_video_inprocess, load_plan, memorize_clip
from m3graph.mcp.server import build_server
from m3graph.mcp.service import McpService
from m3graph.reasoning.perception_memorizer import PerceptionMemorizer
from tests.helpers.explorer import running_explorer
from tests.helpers.graph import rows, variant, wipe, with_settings
from tests.helpers.object_store import S3Server

TOKEN = "storage-test-token"
COOKIES = {"m3graph_explore": TOKEN}
BUCKET, PREFIX = "m3graph-media", "team/a"


@pytest.fixture(scope="module")
def ingested(memory_graph: MemoryGraph, media: Manifest, s3_server: S3Server,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryGraph]:
    wipe(memory_graph)
    s3_server.make_bucket(BUCKET)
    settings = variant(memory_graph.settings, identity={"face_threshold": None, "voice_threshold": None})
    graph = with_settings(memory_graph, s3_server.settings(settings, BUCKET, tmp_path_factory.mktemp("scratch"),
                                                           PREFIX))
    ingest_video_inprocess(graph, text_embedder(graph.settings), media.path("tm-a"), "tm-a")
    yield graph
    wipe(memory_graph)


def _stored(server: S3Server) -> set[str]:
    return {k.removeprefix(f"{PREFIX}/") for k in server.keys(BUCKET, f"{PREFIX}/")}


def test_the_bucket_holds_the_media_and_the_data_dir_only_scratch(ingested: MemoryGraph,
                                                                    s3_server: S3Server) -> None:
    stored = _stored(s3_server)
    for key in ("videos/tm-a/plan.json", "videos/tm-a/inputs/00000.mp4", "videos/tm-a/clips/00000.mp4",
                "videos/tm-a/clips/00001.mp4", "videos/tm-a/audio/00000.wav",
                "videos/tm-a/perception/clip_0_faces.json", "videos/tm-a/perception/clip_1_voices.json",
                "videos/tm-a/memory/clip_1_memory.json"):
        assert key in stored, key
    assert any(k.startswith("videos/tm-a/crops/00000/") for k in stored)
    assert any(k.startswith("videos/tm-a/snippets/00000/") for k in stored)
    local = sorted(str(p.relative_to(ingested.settings.data_dir)) for p in ingested.settings.data_dir.rglob("*")
                   if p.is_file())
    assert local and all(f.startswith(("videos/tm-a/clips/", "videos/tm-a/audio/")) for f in local), local


def test_the_graph_holds_keys_of_stored_objects(ingested: MemoryGraph, s3_server: S3Server) -> None:
    stored = _stored(s3_server)
    refs = rows(ingested, "MATCH (o:FaceObs) RETURN 'face' AS kind, o.crop_uri AS k UNION ALL "
                          "MATCH (u:Utterance) RETURN 'voice' AS kind, u.audio_uri AS k UNION ALL "
                          "MATCH (c:Clip) RETURN 'clip' AS kind, c.uri AS k")
    assert {r["kind"] for r in refs} == {"face", "voice", "clip"}
    assert all(r["k"] in stored for r in refs), [r for r in refs if r["k"] not in stored][:3]


def test_another_host_memorizes_from_the_store_alone(ingested: MemoryGraph, tmp_path: Path) -> None:
    other = with_settings(ingested, ingested.settings.model_copy(update={"data_dir": tmp_path / "host2"}))
    plan = load_plan(other.settings, "tm-a")  # the plan, too, comes from the bucket
    assert [w.index for w in plan.windows] == [0, 1]
    report = memorize_clip(other, text_embedder(other.settings), PerceptionMemorizer(other.settings.perception),
                           plan, 1)
    assert report.memories > 0 and report.memorize_error is None


@pytest.fixture(scope="module")
def server(ingested: MemoryGraph) -> Iterator[str]:
    with running_explorer(ingested, TOKEN) as url:
        yield url


def _get(server: str, path: str, **kwargs: Any) -> requests.Response:
    return requests.get(f"{server}{path}", cookies=COOKIES, timeout=30, allow_redirects=False, **kwargs)


def test_the_explorer_streams_media_from_the_bucket(server: str, ingested: MemoryGraph,
                                                    s3_server: S3Server) -> None:
    (crop,) = rows(ingested, "MATCH (o:FaceObs {video_id: 'tm-a'}) WHERE o.crop_uri IS NOT NULL "
                             "RETURN o.crop_uri AS uri, o.clip_index AS clip ORDER BY o.quality DESC LIMIT 1")
    ok = _get(server, "/media", params={"uri": crop["uri"], "v": "tm-a", "c": crop["clip"]})
    body = s3_server.client().get_object(Bucket=BUCKET, Key=f"{PREFIX}/{crop['uri']}")["Body"].read()
    assert ok.status_code == 200 and ok.headers["content-type"] == "image/jpeg" and ok.content == body
    assert BUCKET not in ok.text and s3_server.endpoint not in ok.text
    page = _get(server, "/clip/tm-a/0")
    assert page.status_code == 200 and s3_server.endpoint not in page.text and "/media?" in page.text
    cut = "videos/tm-a/clips/00000.mp4"
    part = _get(server, "/media", params={"uri": cut, "v": "tm-a", "c": 0}, headers={"Range": "bytes=100-199"})
    whole = s3_server.client().get_object(Bucket=BUCKET, Key=f"{PREFIX}/{cut}")["Body"].read()
    assert part.status_code == 206 and part.content == whole[100:200]
    assert part.headers["content-range"] == f"bytes 100-199/{len(whole)}"
    # a stored object the graph does not reference from that clip is not served
    assert _get(server, "/media", params={"uri": cut, "v": "tm-a", "c": 1}).status_code == 404
    assert _get(server, "/media", params={"uri": "videos/tm-a/plan.json", "v": "tm-a", "c": 0}).status_code == 404


def test_mcp_fetches_a_crop_and_a_snippet_from_the_bucket(ingested: MemoryGraph, s3_server: S3Server) -> None:
    (crop,) = rows(ingested, "MATCH (o:FaceObs {video_id: 'tm-a'}) WHERE o.crop_uri IS NOT NULL "
                             "RETURN o.crop_uri AS uri, o.clip_index AS clip LIMIT 1")
    (snip,) = rows(ingested, "MATCH (u:Utterance {video_id: 'tm-a'}) WHERE u.audio_uri IS NOT NULL "
                             "RETURN u.audio_uri AS uri, u.clip_index AS clip LIMIT 1")
    server = build_server(McpService(ingested.settings, ingested))

    async def call(args: dict[str, Any]) -> tuple[list[Any], str]:
        """(content blocks, '') or ([], the error's text)."""
        try:
            result = await server.call_tool("fetch_media", args)
        except ToolError as exc:
            return [], str(exc)
        if result.is_error:
            return [], " ".join(getattr(b, "text", "") for b in result.content)
        return list(result.content), ""

    image, error = asyncio.run(call({"video": "tm-a", "clip": crop["clip"], "uri": crop["uri"]}))
    body = s3_server.client().get_object(Bucket=BUCKET, Key=f"{PREFIX}/{crop['uri']}")["Body"].read()
    assert not error and image[0].type == "image" and base64.b64decode(image[0].data) == body
    assert image[0].mime_type == "image/jpeg"
    audio, error = asyncio.run(call({"video": "tm-a", "clip": snip["clip"], "uri": snip["uri"]}))
    assert not error and audio[0].type == "audio" and base64.b64decode(audio[0].data)[:4] == b"RIFF"
    _, error = asyncio.run(call({"video": "tm-a", "clip": crop["clip"] + 1, "uri": crop["uri"]}))
    assert "not a media file" in error
    _, error = asyncio.run(call({"video": "tm-a", "clip": 0, "uri": "videos/tm-a/clips/00000.mp4"}))
    assert "only face crops" in error


def test_deleting_the_video_removes_its_objects(ingested: MemoryGraph, s3_server: S3Server,
                                               server: str) -> None:
    assert any(k.startswith("videos/tm-a/") for k in _stored(s3_server))
    ingested.delete_video("tm-a")
    assert not [k for k in _stored(s3_server) if k.startswith("videos/tm-a/")]
    assert not list(ingested.settings.data_dir.rglob("*.*"))
