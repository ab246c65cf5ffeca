"""Media through the store (m3graph/storage): the local default and a real S3-compatible server (moto's server
mode, started by the suite), deletion of stored objects with the graph data they belong to, and migration 15
(host paths in the graph become storage keys)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from m3graph.data_files import ClipFiles
from m3graph.embedding import text_embedder
from m3graph.errors import ConfigError, InvalidInputError, NotFoundError, RetryableError
from m3graph.graphdb.deletion import StoredCopies
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import EquivalenceVote, FaceCluster, VoiceCluster
from m3graph.ingest.pipeline import _FACES, _VOICES, clip_infos, commit_clip
from m3graph.reasoning.perception_memorizer import PerceptionMemorizer
from m3graph.schema.migrations import backfill_media_keys
from m3graph.settings import load_settings
from m3graph.storage import LocalStore, MediaStore, MissingCopiesError, media_store
from m3graph.storage.s3 import S3Store
from tests.graph.test_memorize import _plan
from tests.helpers.graph import face_cluster, rng, rows, unit, voice_cluster, with_settings
from tests.helpers.object_store import SECRET_KEY, S3Server, _free_port


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> MediaStore:
    if request.param == "local":
        return LocalStore(tmp_path / "data")
    server: S3Server = request.getfixturevalue("s3_server")
    bucket = server.make_bucket(f"rt-{abs(hash(str(tmp_path))) % 10**8}")
    return S3Store(server.config(bucket, "some/prefix"))


def test_round_trip_put_get_list_stream_delete(store: MediaStore, tmp_path: Path) -> None:
    source = tmp_path / "in.bin"
    source.write_bytes(bytes(range(256)) * 8)
    store.put_file("videos/v1/clips/00000.mp4", source)
    store.put_bytes("videos/v1/crops/00000/a.jpg", b"jpeg-a")
    store.put_bytes("videos/v1/crops/00000/b.jpg", b"jpeg-b")
    store.put_bytes("videos/v2/plan.json", b"{}")
    assert store.get_bytes("videos/v1/crops/00000/a.jpg") == b"jpeg-a"
    assert store.size("videos/v1/clips/00000.mp4") == 2048 and store.exists("videos/v2/plan.json")
    got = store.get_file("videos/v1/clips/00000.mp4", tmp_path / "out" / "clip.mp4")
    assert got.read_bytes() == source.read_bytes()
    assert b"".join(store.stream("videos/v1/clips/00000.mp4", 10, 19)) == source.read_bytes()[10:20]
    assert store.list("videos/v1/") == ["videos/v1/clips/00000.mp4", "videos/v1/crops/00000/a.jpg",
                                        "videos/v1/crops/00000/b.jpg"]
    store.put_bytes("videos/v1/crops/00000/a.jpg", b"replaced")
    assert store.get_bytes("videos/v1/crops/00000/a.jpg") == b"replaced"
    assert store.delete_keys(["videos/v1/crops/00000/a.jpg", "videos/v1/crops/00000/missing.jpg"]) == 1
    assert store.delete_prefix("videos/v1/") == 2
    assert store.list("videos/v1/") == [] and store.list("videos/v2/") == ["videos/v2/plan.json"]
    with pytest.raises(NotFoundError):
        store.get_bytes("videos/v1/crops/00000/a.jpg")
    assert store.size("videos/v1/clips/00000.mp4") is None


@pytest.mark.parametrize("key", ["/etc/passwd", "videos/../../etc/passwd", "videos/v1/../x", "other/v1/x",
                                 "videos//x", "videos/v1/x\x00", "videos\\v1", ""])
def test_keys_that_could_leave_the_store_are_refused(store: MediaStore, key: str) -> None:
    with pytest.raises(InvalidInputError):
        store.put_bytes(key, b"x")


def test_an_unreachable_store_is_a_transient_failure(s3_server: S3Server, tmp_path: Path) -> None:
    """A cut or refused connection must reach the pipeline as RetryableError (its steps retry those with backoff),
    not as a botocore error that fails the clip; a multi-host campaign's store partition needed a resubmission
    before. Nothing listens on the port, so every call fails at connect time."""
    config = s3_server.config("unreachable").model_copy(update={
        "endpoint_url": f"http://127.0.0.1:{_free_port()}", "max_attempts": 1, "connect_timeout_s": 1.0})
    store = S3Store(config)
    source = tmp_path / "f.bin"
    source.write_bytes(b"x")
    calls = {"put_bytes": lambda: store.put_bytes("videos/v/x", b"x"),
             "put_file": lambda: store.put_file("videos/v/x", source),
             "get_bytes": lambda: store.get_bytes("videos/v/x"),
             "get_file": lambda: store.get_file("videos/v/x", tmp_path / "out" / "x"),
             "size": lambda: store.size("videos/v/x"),
             "list": lambda: store.list("videos/"),
             "delete_prefix": lambda: store.delete_prefix("videos/v/"),
             "stream": lambda: list(store.stream("videos/v/x"))}
    for name, call in calls.items():
        with pytest.raises(RetryableError, match="unreachable") as err:
            call()
        assert SECRET_KEY not in str(err.value), name
    assert not list((tmp_path / "out").glob("*")), "a failed download leaves no partial file"


def test_credentials_are_secrets(s3_server: S3Server, caplog: pytest.LogCaptureFixture) -> None:
    config = s3_server.config("secrets-bucket")
    settings = load_settings(storage=config.model_dump() | {
        "access_key_id": config.access_key_id.get_secret_value(),  # type: ignore[union-attr]
        "secret_access_key": SECRET_KEY})
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("m3graph").info("settings: %s %r", settings, settings.storage)
    shown = repr(settings) + str(settings) + repr(settings.storage) + caplog.text + repr(S3Store(settings.storage))
    assert SECRET_KEY not in shown and "**********" in repr(settings.storage)
    with pytest.raises(ConfigError) as err:
        load_settings(storage={"url": "s3://x", "secret_access_key": SECRET_KEY})
    assert "storage.url" in str(err.value) and SECRET_KEY not in str(err.value)


# ---------------------------------------------------------------------------------------------- pipeline + S3


@pytest.fixture
def s3_graph(graph: MemoryGraph, s3_server: S3Server, tmp_path: Path) -> tuple[MemoryGraph, S3Server, str]:
    bucket = s3_server.make_bucket(f"media-{abs(hash(str(tmp_path))) % 10**8}")
    return with_settings(graph, s3_server.settings(graph.settings, bucket, tmp_path / "scratch", "m3")), \
        s3_server, bucket


def _stage_in_store(g: MemoryGraph, video: str, clips: int, people: int = 2) -> None:
    """What a worker leaves after cutting and perceiving: crops, snippets, cut, audio and caches in the store,
    produced on scratch and put (scratch copies of crops and snippets removed, as the pipeline does)."""
    gen = rng(5)
    faces = [unit(g.settings.identity.face_dim, gen) for _ in range(people)]
    voices = [unit(g.settings.identity.voice_dim, gen) for _ in range(people)]
    store = media_store(g.settings)
    for i in range(clips):
        work = ClipFiles(g.settings, video, i)
        fcs, vcs = [], []
        for p in range(people):
            fc = face_cluster(p, faces[p], gen, times=[30.0 * i + 1 + p * 10, 30.0 * i + 2 + p * 10])
            obs = []
            for k, o in enumerate(fc.observations):
                key = f"{work.crops_key}p{p}_{k}.jpg"
                store.put_bytes(key, b"jpeg")
                obs.append(o.model_copy(update={"crop_uri": key}))
            fcs.append(FaceCluster(label=p, observations=obs))
            vc = voice_cluster(p, voices[p], gen, n=1, start=30.0 * i + 1 + p * 10)
            key = f"{work.snippets_key}p{p}.wav"
            store.put_bytes(key, b"wav")
            vcs.append(VoiceCluster(label=p, utterances=[vc.utterances[0].model_copy(update={"audio_uri": key})]))
        store.put_bytes(work.faces_key, _FACES.dump_json(fcs))
        store.put_bytes(work.voices_key, _VOICES.dump_json(vcs))
        store.put_bytes(work.clip_key, b"mp4")
        store.put_bytes(work.audio_key, b"wav")
    plan = _plan(g.settings, video, clips)
    g.plan_clips(clip_infos(g.settings, plan, list(range(clips))))
    embedder = text_embedder(g.settings)
    for i in range(clips):
        commit_clip(g, embedder, PerceptionMemorizer(), plan, i)


def _local_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_with_s3_the_graph_holds_keys_of_stored_objects(s3_graph: tuple[MemoryGraph, S3Server, str]) -> None:
    g, server, bucket = s3_graph
    _stage_in_store(g, "s3v", 2)
    stored = set(server.keys(bucket, "m3/"))
    refs = rows(g, "MATCH (o:FaceObs {video_id: 's3v'}) RETURN o.crop_uri AS k UNION ALL "
                   "MATCH (u:Utterance {video_id: 's3v'}) RETURN u.audio_uri AS k UNION ALL "
                   "MATCH (c:Clip {video_id: 's3v'}) RETURN c.uri AS k")
    assert len(refs) == 2 * (4 + 2 + 1)
    assert all(r["k"].startswith("videos/s3v/") and f"m3/{r['k']}" in stored for r in refs)
    assert {"m3/videos/s3v/memory/clip_0_memory.json", "m3/videos/s3v/memory/clip_1_memory.json"} <= stored
    # memorizing read the caches from the bucket: nothing but scratch (the cut fetched for the memorizer) is local
    assert all(f.startswith(("videos/s3v/clips/", "videos/s3v/audio/")) for f in _local_files(g.settings.data_dir))


def test_with_s3_deletion_removes_the_objects_biometric_data_included(
        s3_graph: tuple[MemoryGraph, S3Server, str]) -> None:
    g, server, bucket = s3_graph
    _stage_in_store(g, "bio3", 2)
    g.delete_clip("bio3", 1)
    left = server.keys(bucket, "m3/videos/bio3/")
    assert left and not [k for k in left if "00001" in k or "clip_1_" in k]
    (face,) = [r["id"] for r in rows(g, "MATCH (o:FaceObs {cluster_label: 0})-[:OF]->(f:Face) "
                                        "RETURN DISTINCT f.entity_id AS id")]
    (voice,) = [r["id"] for r in rows(g, "MATCH (o:Utterance {cluster_label: 0})-[:OF]->(v:Voice) "
                                         "RETURN DISTINCT v.entity_id AS id")]
    g.record_votes("bio3", 0, [EquivalenceVote(face_id=face, voice_id=voice, source="manual")], "manual")
    char = g.characters_of([face])[face]
    summary = g.delete_character(char)
    assert summary["files"] > 0 and summary["cached_clusters"] == 2
    left = server.keys(bucket, "m3/videos/bio3/")
    assert not [k for k in left if "/p0" in k], left  # the person's crops and snippets
    assert [k for k in left if "/p1" in k] and not [k for k in left if "/memory/" in k]
    cached = json.loads(media_store(g.settings).get_bytes(ClipFiles(g.settings, "bio3", 0).faces_key))
    assert [c["label"] for c in cached] == [1]  # their embeddings are gone from the cache in the bucket
    g.delete_video("bio3")
    assert server.keys(bucket, "m3/videos/bio3/") == []
    assert not [f for f in _local_files(g.settings.data_dir) if "bio3" in f]


def test_with_s3_a_delete_finds_missing_copies_in_the_bucket(s3_graph: tuple[MemoryGraph, S3Server, str]) -> None:
    """The check around a delete (what the graph names, what the bucket holds) works on the object store too:
    one listing per video folder, the missing object named, the remaining ones removed."""
    g, server, bucket = s3_graph
    _stage_in_store(g, "chk3", 2)
    lost = "videos/chk3/crops/00001/p1_0.jpg"
    media_store(g.settings).delete_keys([lost])
    copies = StoredCopies.of_clips(g.ex, g.settings, "chk3", 1)
    assert len(copies.expected) == 4 + 2 + 1 and copies.expected - copies.present == {lost}
    g.delete_clip("chk3", 1)
    with pytest.raises(MissingCopiesError, match=lost) as failed:
        copies.settle()
    assert "clip chk3#1 was deleted from the graph" in str(failed.value) and SECRET_KEY not in str(failed.value)
    copies = StoredCopies.of_clips(g.ex, g.settings, "chk3")
    assert len(copies.expected) == 7 and copies.present == copies.expected
    g.delete_video("chk3")
    copies.settle()  # nothing missing: no error
    assert server.keys(bucket, "m3/videos/chk3/") == []


# ---------------------------------------------------------------------------------------------- migration 15


def test_migration_15_turns_host_paths_into_keys(graph: MemoryGraph, tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = graph.settings.model_copy(update={"data_dir": data})
    inside = data / "videos" / "old" / "crops" / "00000" / "face_1.jpg"
    snippet = data / "videos" / "old" / "snippets" / "00000" / "voice_1.wav"
    outside = tmp_path / "elsewhere" / "face.jpg"
    with graph.ex.session() as session:
        session.run("""
            CREATE (:Clip {clip_key: 'old#0', video_id: 'old', clip_index: 0, uri: $clip})
            CREATE (:FaceObs {obs_key: 'old#0#a', video_id: 'old', clip_index: 0, crop_uri: $crop_uri})
            CREATE (:FaceObs {obs_key: 'old#0#b', video_id: 'old', clip_index: 0, crop_uri: $outside})
            CREATE (:FaceObs {obs_key: 'old#0#c', video_id: 'old', clip_index: 0,
                              crop_uri: 'videos/old/crops/00000/face_2.jpg'})
            CREATE (:Utterance {utt_key: 'old#0#u', video_id: 'old', clip_index: 0, audio_uri: $snippet})
            """, clip=str(data / "videos" / "old" / "clips" / "00000.mp4"), crop_uri=inside.as_uri(),
                    outside=outside.as_uri(), snippet=str(snippet)).consume()
    assert backfill_media_keys(graph.ex, settings, batch=2) == 3
    got = {r["k"]: r["u"] for r in rows(graph, "MATCH (n) WHERE n.video_id = 'old' "
                                                "RETURN coalesce(n.obs_key, n.utt_key, n.clip_key) AS k, "
                                                "coalesce(n.crop_uri, n.audio_uri, n.uri) AS u")}
    assert got == {"old#0": "videos/old/clips/00000.mp4", "old#0#a": "videos/old/crops/00000/face_1.jpg",
                   "old#0#b": outside.as_uri(), "old#0#c": "videos/old/crops/00000/face_2.jpg",
                   "old#0#u": "videos/old/snippets/00000/voice_1.wav"}
    assert backfill_media_keys(graph.ex, settings) == 0  # idempotent
    applied = {r["version"] for r in graph.ex.read("schema/applied_migrations")}
    assert 15 in applied
