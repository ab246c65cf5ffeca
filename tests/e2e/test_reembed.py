"""`m3graph reembed`: a graph moves to a text model of another dimension, resumably, and nothing without it."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from click.testing import CliRunner

from m3graph.cli import main
from m3graph.cli.exit_codes import exit_code
from m3graph.devkit.testmedia import Manifest, build_test_media
from m3graph.embedding import text_embedder
from m3graph.errors import InvalidInputError, SchemaVersionError
from m3graph.graphdb.deletion import delete_clip
from m3graph.graphdb.reembed import MissingFilesError, index_dimension, reembed, stored_file
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.pipeline import ingest_video_inprocess
from m3graph.observations import FaceCluster, FaceObservation, UtteranceObservation, VoiceCluster
from m3graph.perception.file_embed import FaceFileEmbedder, VoiceFileEmbedder
from m3graph.schema.migrations import check_schema
from m3graph.settings import Settings
from tests.helpers.graph import add_clip, mem, near, rng, unit, variant, wipe, with_settings

REPO = Path(__file__).resolve().parents[2]
# Least cosine between a vector perception computed and the same observation re-embedded from its stored file.
TOLERANCE = {"face": 0.98, "voice": 0.999}  # measured: 0.992 and 1.000


class WordHashEmbedder:
    """A deterministic stand-in text model of any dimension (the real one is exercised by the demo tests)."""

    def __init__(self, dim: int, fail_after: int | None = None) -> None:
        self.dim = dim
        self.calls = 0
        self.fail_after = fail_after

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("interrupted")
        rows = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(self.dim) for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _memories(mg: MemoryGraph) -> None:
    g = rng(4)
    q = unit(mg.settings.memory.text_dim, g)
    for clip in range(3):
        add_clip(mg, "re", clip)
        mg.write_memories("re", clip, [mem("episodic", f"Line {clip}.{i} about the garden.", near(q, 0.5, g))
                                       for i in range(3)])


def _dims(mg: MemoryGraph) -> set[int]:
    return {len(r["embedding"]) for r in mg.ex.read("eval/memory_vectors", source_id="re")}


def test_reembed_moves_memories_to_a_new_dimension_and_resumes(graph: MemoryGraph, settings: Settings) -> None:
    _memories(graph)
    small = variant(settings, memory={"text_dim": 16}, text_model={"model": "/models/word-hash-16"})
    with pytest.raises(SchemaVersionError, match="m3graph reembed --kind text"):
        check_schema(graph.ex, small)
    try:
        # Interrupted after the first batch of 4: the index is already dropped, 4 memories are moved.
        with pytest.raises(RuntimeError, match="interrupted"):
            reembed(graph.ex, small, "text", embedder=WordHashEmbedder(16, fail_after=2), batch_size=4)
        assert index_dimension(graph.ex, "text") is None
        assert _dims(graph) == {16, settings.memory.text_dim}
        done = reembed(graph.ex, small, "text", embedder=WordHashEmbedder(16), batch_size=4)
        assert (done.embedded, done.total, done.dim) == (5, 9, 16)
        assert index_dimension(graph.ex, "text") == 16 and _dims(graph) == {16}
        check_schema(graph.ex, small)  # the graph now belongs to the new model
        again = reembed(graph.ex, small, "text", embedder=WordHashEmbedder(16))
        assert again.embedded == 0 and not again.index_recreated  # idempotent
        # Search runs on the moved graph, through the rebuilt index as well as the exact scan.
        moved = MemoryGraph(graph.ex, small)
        query = WordHashEmbedder(16).embed(["Line 1.2 about the garden."])[0]
        hits = moved.search.search(SearchSpec(query, mode="node", k=1, text="Line 1.2 about the garden."))
        assert [m.text for r in hits for m in r.memories] == ["Line 1.2 about the garden."]
        assert moved.search.search(SearchSpec(query, mode="node", k=1))[0].memories[0].text == \
            "Line 1.2 about the garden."
    finally:  # the session's graph goes back to the configured model
        wipe(graph)
        reembed(graph.ex, settings, "text", embedder=WordHashEmbedder(settings.memory.text_dim))
    assert index_dimension(graph.ex, "text") == settings.memory.text_dim


def test_reembed_refuses_without_the_model(graph: MemoryGraph, settings: Settings) -> None:
    _memories(graph)
    before = graph.ex.read("eval/memory_vectors", source_id="re")
    out = CliRunner().invoke(main, ["reembed", "--model", "/nonexistent/model-dir"], obj=settings)
    assert out.exit_code != 0 and "/nonexistent/model-dir" in str(out.exception or out.output)
    assert graph.ex.read("eval/memory_vectors", source_id="re") == before  # nothing touched
    assert index_dimension(graph.ex, "text") == settings.memory.text_dim
    for kind in ("face", "voice"):
        with pytest.raises(InvalidInputError, match=f"re-embedding {kind} needs the new model's embedder"):
            reembed(graph.ex, settings, kind)  # type: ignore[arg-type]
    out = CliRunner().invoke(main, ["reembed", "--kind", "face", "--model", "onnx:/nonexistent/arcface.onnx"],
                             obj=settings)
    assert out.exit_code != 0 and "/nonexistent/arcface.onnx" in str(out.exception or out.output)


# ---------------------------------------------------------------------------------------------- faces and voices
# tm-a (60 s: Obama, then Biden, then both; two espeak voices) ingested once with perception memories; its crops and
# snippets lie under the module's data_dir. The tests run in file order on that one graph and each leaves it on the
# configured models (the missing-file test, which changes the graph for good, comes last).

Kind2 = Literal["face", "voice"]
LABEL = {"face": ("Face", "FaceObs", "obs_key", "crop_uri"), "voice": ("Voice", "Utterance", "utt_key", "audio_uri")}


class Widened:
    """A stand-in model of another dimension: the real model's vectors through a fixed map with orthonormal
    columns (cosines are kept exactly, so identities must come out the same), optionally failing mid-way."""

    def __init__(self, real: FaceFileEmbedder | VoiceFileEmbedder, extra: int, fail_after: int | None = None) -> None:
        self.real = real
        self.dim = real.dim + extra
        self.model = f"widened-{real.model}-{self.dim}"
        q, _ = np.linalg.qr(np.random.default_rng(7).standard_normal((self.dim, real.dim)))
        self.map = q  # (dim, real.dim), orthonormal columns
        self.calls = 0
        self.fail_after = fail_after

    def embed_files(self, paths: Sequence[Path]) -> np.ndarray:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("interrupted")
        return self.real.embed_files(paths) @ self.map.T

    def embed_vector(self, vector: Sequence[float]) -> list[float]:
        return [float(x) for x in self.map @ np.asarray(vector)]


@pytest.fixture(scope="module")
def tm_a(memory_graph: MemoryGraph, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryGraph]:
    media: Manifest = build_test_media(REPO / ".m3graph" / "testmedia")
    wipe(memory_graph)
    settings = variant(memory_graph.settings, identity={"face_threshold": None, "voice_threshold": None})
    g = with_settings(memory_graph, settings.model_copy(update={"data_dir": tmp_path_factory.mktemp("data")}))
    ingest_video_inprocess(g, text_embedder(g.settings), media.path("tm-a"), "tm-a")
    yield g
    wipe(memory_graph)
    _restore_indexes(memory_graph)


@pytest.fixture(scope="module")
def real(tm_a: MemoryGraph) -> dict[str, FaceFileEmbedder | VoiceFileEmbedder]:
    cfg = tm_a.settings.perception
    return {"face": FaceFileEmbedder(cfg.face_embedder), "voice": VoiceFileEmbedder(cfg.speaker_embedder,
                                                                                    turns=cfg.voice_turns)}


def _restore_indexes(mg: MemoryGraph) -> None:
    """An empty graph's face/voice indexes back at the configured dimensions (a no-op when they are)."""
    for kind in ("face", "voice"):
        dim = mg.settings.identity.face_dim if kind == "face" else mg.settings.identity.voice_dim
        if index_dimension(mg.ex, kind) != dim:  # type: ignore[arg-type]
            mg.ex.write("delete/entities", ids=[r["id"] for r in _rows(mg, f"MATCH (e:{LABEL[kind][0]}) "
                                                                           "RETURN e.entity_id AS id")])
            stub = type("Stub", (), {"model": "restore", "dim": dim, "embed_files": lambda self, p: None})()
            reembed(mg.ex, mg.settings, kind, embedder=stub, missing="drop")  # type: ignore[arg-type]


def _rows(g: MemoryGraph, q: str, **params: Any) -> list[dict[str, Any]]:
    with g.ex.session() as session:
        return [r.data() for r in session.run(q, params)]


def _state(g: MemoryGraph, kind: Kind2) -> dict[str, Any]:
    """Who is who (entities, their exemplar observations and characters) and every vector, by key."""
    label, obs, key, _ = LABEL[kind]
    entities = {r["id"]: r for r in _rows(
        g, f"MATCH (e:{label}) OPTIONAL MATCH (e)-[:IS]->(c:Character) RETURN e.entity_id AS id, "
           "e.exemplar_obs AS ex, e.centroid_unit AS unit, e.embedding_model AS model, c.char_id AS char")}
    observations = {r["key"]: r for r in _rows(
        g, f"MATCH (o:{obs})-[:OF]->(e:{label}) RETURN o.{key} AS key, e.entity_id AS id, o.embedding AS vec, "
           "o.candidate AS cand")}
    return {"entities": entities, "obs": observations}


def _who(state: dict[str, Any]) -> tuple[Any, ...]:
    return (sorted((i, tuple(e["ex"] or ()), e["char"]) for i, e in state["entities"].items()),
            sorted((k, o["id"], o["cand"]) for k, o in state["obs"].items()))


def _same_as(g: MemoryGraph) -> list[dict[str, Any]]:
    return _rows(g, "MATCH (f:Face)-[r:SAME_AS]->(v:Voice) RETURN f.entity_id AS f, v.entity_id AS v, "
                    "r.votes AS votes ORDER BY f, v")


@pytest.mark.parametrize("kind", ["face", "voice"])
def test_reembed_with_the_same_model_keeps_every_identity(tm_a: MemoryGraph, real: dict[str, Any],
                                                          kind: Kind2) -> None:
    before, votes = _state(tm_a, kind), _same_as(tm_a)
    assert len(before["entities"]) >= 2 and all(o["vec"] for o in before["obs"].values())
    done = reembed(tm_a.ex, tm_a.settings, kind, embedder=real[kind], batch_size=1)
    after = _state(tm_a, kind)
    assert (done.embedded, done.total, done.observations, done.index_recreated) == (
        len(before["entities"]), len(before["entities"]), len(before["obs"]), False)
    assert _who(after) == _who(before) and _same_as(tm_a) == votes  # the same people, characters and votes
    assert {e["model"] for e in after["entities"].values()} == {real[kind].model}
    # Vectors within tolerance: a crop / snippet file re-embedded is close to what perception computed from the
    # frame / clip audio (JPEG and 16-bit quantisation, the face's surroundings replaced by its replicated border).
    cos = [float(np.dot(before["obs"][k]["vec"], o["vec"])) for k, o in after["obs"].items()]
    ent = [float(np.dot(before["entities"][i]["unit"], e["unit"])) for i, e in after["entities"].items()]
    print(f"{kind}: observation cosine min {min(cos):.4f} median {np.median(cos):.4f}; centroid min {min(ent):.4f}")
    assert min(cos) > TOLERANCE[kind] and min(ent) > TOLERANCE[kind]
    again = reembed(tm_a.ex, tm_a.settings, kind, embedder=real[kind])
    assert again.embedded == 0 and again.observations == 0  # idempotent
    check_schema(tm_a.ex, tm_a.settings)


@pytest.mark.parametrize("kind", ["face", "voice"])
def test_reembed_to_another_dimension_resumes_and_still_resolves(tm_a: MemoryGraph, real: dict[str, Any],
                                                                 kind: Kind2) -> None:
    label, obs, key, uri = LABEL[kind]
    before = _state(tm_a, kind)
    wide = Widened(real[kind], 64)
    dim_field = "face_dim" if kind == "face" else "voice_dim"
    section = "face_embedder" if kind == "face" else "speaker_embedder"
    threshold = tm_a.settings.face_match_threshold if kind == "face" else tm_a.settings.voice_match_threshold
    moved_settings = variant(tm_a.settings, identity={dim_field: wide.dim, f"{kind}_threshold": threshold},
                             perception={section: wide.model})
    with pytest.raises(SchemaVersionError, match=f"m3graph reembed --kind {kind}"):
        check_schema(tm_a.ex, moved_settings)
    try:
        # Interrupted after the first batch of one entity: the index is already dropped, one entity is moved.
        with pytest.raises(RuntimeError, match="interrupted"):
            reembed(tm_a.ex, moved_settings, kind, embedder=Widened(real[kind], 64, fail_after=1), batch_size=1)
        assert index_dimension(tm_a.ex, kind) is None
        dims = sorted(len(e["unit"]) for e in _state(tm_a, kind)["entities"].values())
        assert dims == [real[kind].dim] * (len(dims) - 1) + [wide.dim]
        done = reembed(tm_a.ex, moved_settings, kind, embedder=wide, batch_size=1)
        assert (done.embedded, done.total, done.dim, done.index_recreated) == (
            len(before["entities"]) - 1, len(before["entities"]), wide.dim, True)
        assert index_dimension(tm_a.ex, kind) == wide.dim
        after = _state(tm_a, kind)
        assert {len(e["unit"]) for e in after["entities"].values()} == {wide.dim}
        assert {len(o["vec"]) for o in after["obs"].values()} == {wide.dim}
        assert _who(after) == _who(before)
        check_schema(tm_a.ex, moved_settings)  # the graph now belongs to the new model
        # A new observation (a stored file of the entity with the most observations, seen again in a new clip)
        # resolves through the re-created index to the same entity.
        ids = [o["id"] for o in after["obs"].values()]
        target = max(set(ids), key=ids.count)
        row = _rows(tm_a, f"MATCH (o:{obs})-[:OF]->(e:{label} {{entity_id: $id}}) RETURN o.{uri} AS uri "
                          f"ORDER BY o.quality DESC LIMIT 1", id=target)[0]
        vector = wide.embed_files([stored_file(row["uri"], tm_a.settings.data_dir)])[0].tolist()
        moved = with_settings(tm_a, moved_settings)
        add_clip(moved, "re-new", 0)
        if kind == "face":
            cluster: Any = FaceCluster(label=0, observations=[FaceObservation(
                frame_time_s=1.0, bbox=(0, 0, 80, 80), det_score=0.99, quality=0.9, embedding=vector)])
            got = moved.resolve_faces("re-new", 0, [cluster])
        else:
            cluster = VoiceCluster(label=0, utterances=[UtteranceObservation(
                start_s=1.0, end_s=3.0, text="hello again", embedding=vector, quality=2.0)])
            got = moved.resolve_voices("re-new", 0, [cluster])
        assert [(r.entity_id, r.created) for r in got] == [(target, False)]
        delete_clip(moved.ex, moved_settings, "re-new", 0)
    finally:  # back to the configured model, from the same files
        reembed(tm_a.ex, tm_a.settings, kind, embedder=real[kind])
    assert index_dimension(tm_a.ex, kind) == real[kind].dim and _who(_state(tm_a, kind)) == _who(before)


def test_reembed_refuses_or_drops_when_files_are_gone(tm_a: MemoryGraph, real: dict[str, Any]) -> None:
    kind: Kind2 = "face"
    label, obs, key, uri = LABEL[kind]
    _rows(tm_a, f"MATCH (e:{label}) REMOVE e.embedding_model")  # a graph never moved: every entity is to do
    before = _state(tm_a, kind)
    counts: dict[int, int] = {}
    for o in before["obs"].values():
        counts[o["id"]] = counts.get(o["id"], 0) + 1
    lost_whole = min(counts, key=lambda i: (counts[i], i))  # every file of this entity goes
    kept = max(counts, key=lambda i: (counts[i], -i))  # and the best exemplar file of this one
    best = before["entities"][kept]["ex"][0]
    gone = [r["uri"] for r in _rows(tm_a, f"MATCH (o:{obs})-[:OF]->(e:{label}) WHERE e.entity_id = $lost "
                                          f"OR o.{key} = $best RETURN o.{uri} AS uri", lost=lost_whole, best=best)]
    for u in gone:
        stored_file(u, tm_a.settings.data_dir).unlink()  # type: ignore[union-attr]
    wide = Widened(real[kind], 64)
    moved_settings = variant(tm_a.settings, identity={"face_dim": wide.dim})
    try:
        with pytest.raises(MissingFilesError, match=f"{kind}_{lost_whole} .*nothing was changed") as err:
            reembed(tm_a.ex, moved_settings, kind, embedder=wide)
        assert set(err.value.missing) == {lost_whole, kept} and best in err.value.missing[kept]
        assert _state(tm_a, kind) == before and index_dimension(tm_a.ex, kind) == real[kind].dim  # untouched
        out = CliRunner().invoke(main, ["reembed", "--kind", "face"], obj=tm_a.settings)
        assert isinstance(out.exception, MissingFilesError) and exit_code(out.exception) == 66  # not found
        assert "--drop-missing" in str(out.exception)
        assert _state(tm_a, kind) == before

        done = reembed(tm_a.ex, moved_settings, kind, embedder=wide, missing="drop")
        assert done.unmatchable == [lost_whole] and done.dropped_observations == len(gone)
        assert index_dimension(tm_a.ex, kind) == wide.dim
        after = _state(tm_a, kind)
        assert after["entities"][lost_whole]["unit"] is None  # kept, with its character, but unmatchable
        assert after["entities"][lost_whole]["char"] == before["entities"][lost_whole]["char"]
        assert best not in after["entities"][kept]["ex"] and not after["obs"][best]["cand"]
        assert {len(e["unit"]) for i, e in after["entities"].items() if i != lost_whole} == {wide.dim}
        assert all(o["vec"] is None for o in after["obs"].values() if o["id"] == lost_whole)
        check_schema(tm_a.ex, moved_settings)
    finally:
        reembed(tm_a.ex, tm_a.settings, kind, embedder=real[kind], missing="drop")
    assert index_dimension(tm_a.ex, kind) == real[kind].dim
