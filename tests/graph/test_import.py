"""Importing research VideoGraph pickles, against the real Neo4j and the real MiniLM text model.

The pickles are built by `tests/helpers/m3_pickles.py` with the research code's class paths and data layout. The
security tests check that a hostile pickle is refused *before* anything from it runs (a marker file that the
payload would create must not exist) and that nothing reaches the graph.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from neo4j import Driver

from m3graph.embedding import TextEmbedder, text_embedder
from m3graph.errors import ImportFormatError, InvalidInputError
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.m3_import import SPEAKER_MODELS_NOT_IN_PICKLES, ImportSummary, VideoExistsError, import_pickle
from m3graph.ingest.safe_unpickle import load_videograph
from m3graph.settings import Settings
from tests.helpers.graph import wipe_owned
from tests.helpers.m3_pickles import GraphBuilder, sample_graph, unit

VIDEO = "kitchen-import"
PRE_ALLOCATED = 40  # entity ids taken before the import, so new ids visibly differ from the pickle's


@pytest.fixture(scope="module")
def embedder(settings: Settings) -> TextEmbedder:
    return text_embedder(settings)


@pytest.fixture
def import_settings(settings: Settings, tmp_path: Path) -> Settings:
    """The session settings with crops written under this test's temp dir, never into the checkout."""
    return settings.model_copy(update={"data_dir": tmp_path / "data"})


@pytest.fixture
def graph(import_settings: Settings, driver: Driver) -> Iterator[MemoryGraph]:
    wipe_owned(driver, import_settings.neo4j_database)
    g = MemoryGraph.connect(import_settings)
    try:
        yield g
    finally:
        g.close()


def rows(driver: Driver, cypher: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(cypher, params)
    return [r.data() for r in records]


def totals(graph: MemoryGraph) -> dict[str, int]:
    return graph.counts()


def _import_sample(graph: MemoryGraph, tmp_path: Path, embedder: TextEmbedder, **kw: Any) -> tuple[ImportSummary,
                                                                                                     dict[str, int]]:
    builder, ids = sample_graph(voice_dim=graph.settings.identity.voice_dim)  # the configured width
    path = builder.dump(tmp_path / "kitchen_30_5_-1_10_20_0.3_0.6.pkl")
    graph.ex.write("graph/allocate_ids", counter="entity", n=PRE_ALLOCATED)
    return import_pickle(graph, path, VIDEO, embedder, **kw), ids


def _voices_kept_out(graph: MemoryGraph) -> int:
    """1 when the configured speaker embedder (CAM++, the default) can never match a pickle's ERes2NetV2 voices:
    the sample's voice is then imported outside the voice index, with one warning that says why."""
    return int(graph.settings.perception.speaker_embedder in SPEAKER_MODELS_NOT_IN_PICKLES)


# ---------------------------------------------------------------------------------------------- mapping


def test_import_maps_clips_entities_memories_votes_and_characters(
        graph: MemoryGraph, driver: Driver, tmp_path: Path, embedder: TextEmbedder) -> None:
    summary, ids = _import_sample(graph, tmp_path, embedder)
    alice, bob, voice = (summary.entity_ids[f"face_{ids['alice']}"], summary.entity_ids[f"face_{ids['bob']}"],
                         summary.entity_ids[f"voice_{ids['voice']}"])
    assert (alice, voice, bob) == (PRE_ALLOCATED + 1, PRE_ALLOCATED + 2, PRE_ALLOCATED + 3)  # research id order

    assert (summary.clips, summary.faces, summary.voices) == (3, 2, 1)
    assert (summary.episodic, summary.semantic, summary.equivalences) == (10, 3, 1)
    assert (summary.same_as_pairs, summary.votes, summary.characters) == (1, 2, 2)
    kept_out = _voices_kept_out(graph)
    assert (summary.faces_unindexed, summary.voices_unindexed) == (0, kept_out)
    assert (summary.face_observations, summary.utterances, summary.utterance_texts, summary.asr_dropped) == (5, 2, 2, 0)
    assert (summary.face_crops, summary.face_crops_linked) == (5, 5)
    assert len(summary.warnings) == kept_out and all("kept out of the voice index" in w for w in summary.warnings)
    assert summary.skipped_nodes == 0 and summary.unresolved_tags == 0

    counts = graph.counts(VIDEO)
    assert (counts["Clip"], counts["Memory"], counts["FaceObs"], counts["Utterance"]) == (3, 13, 5, 2)
    # Imported statements get slots and versions like memorized ones (facts that change).
    facts = rows(driver, "MATCH (m:Memory {video_id: $v}) WHERE m.slot_key IS NOT NULL "
                         "RETURN m.slot_key AS slot, m.slot_value AS value, m.current AS current", v=VIDEO)
    assert {"slot": f"face_{alice} · name", "value": "Alice", "current": True} in facts
    assert (counts["Face"], counts["Voice"], counts["Character"], counts["SAME_AS"], counts["votes"]) == (2, 1, 2, 1, 2)

    clips = rows(driver, "MATCH (c:Clip {video_id: $v}) RETURN c.clip_index AS i, c.start_s AS s, c.end_s AS e "
                         "ORDER BY i", v=VIDEO)
    assert clips == [{"i": 0, "s": 0.0, "e": 30.0}, {"i": 1, "s": 30.0, "e": 60.0}, {"i": 2, "s": 60.0, "e": 90.0}]
    assert rows(driver, "MATCH (:Clip {clip_key: $a})-[:NEXT]->(c:Clip) RETURN c.clip_index AS i",
                a=f"{VIDEO}#0") == [{"i": 1}]

    # Token-exact renumbering: <face_1> next to <face_12> (a substring rewrite would produce <face_412>).
    texts = {r["t"] for r in rows(driver, "MATCH (m:Memory {video_id: $v}) RETURN m.text AS t", v=VIDEO)}
    assert f"<face_{alice}> hands a cup of coffee to <face_{bob}>." in texts
    assert f"<face_{bob}> and <face_{alice}> are neighbours." in texts
    assert f"Equivalence: <face_{alice}>, <voice_{voice}>" in texts
    assert not any("<face_1>" in t or "<face_12>" in t or "<voice_2>" in t for t in texts)

    # Kinds, order within the clip, mentions, embeddings of the configured dimension.
    clip0 = rows(driver, "MATCH (m:Memory {video_id: $v, clip_index: 0}) RETURN m.kind AS kind, m.text AS text, "
                         "m.order_in_clip AS o, m.is_equivalence AS eq, size(m.embedding) AS dim ORDER BY o", v=VIDEO)
    assert [(r["o"], r["kind"]) for r in clip0] == [(0, "episodic"), (1, "episodic"), (2, "episodic"),
                                                    (3, "semantic"), (4, "semantic")]
    assert clip0[0]["text"] == "The kitchen is empty in the morning." and clip0[3]["eq"] is True
    assert {r["dim"] for r in clip0} == {graph.settings.memory.text_dim}
    hand = rows(driver, "MATCH (m:Memory {video_id: $v})-[r:MENTIONS]->(e) WHERE m.text STARTS WITH $p "
                        "RETURN e.entity_id AS e ORDER BY r.position", v=VIDEO, p=f"<face_{alice}> hands")
    assert [r["e"] for r in hand] == [alice, bob]

    # Entities: exemplars as evidence in the first mentioning clip, indexed centroids, crops as files.
    faces = {r["id"]: r for r in rows(driver, "MATCH (f:Face) OPTIONAL MATCH (o:FaceObs)-[:OF]->(f) "
                                              "RETURN f.entity_id AS id, f.n_exemplars AS n, f.dim AS dim, "
                                              "f.centroid_unit IS NOT NULL AS indexed, "
                                              "collect(o.clip_index) AS clips, collect(o.crop_uri) AS crops")}
    assert faces[alice]["n"] == 3 and faces[bob]["n"] == 2 and faces[alice]["dim"] == 128
    assert faces[alice]["indexed"] and faces[bob]["indexed"]
    assert set(faces[alice]["clips"]) == {0} and set(faces[bob]["clips"]) == {1}
    assert all(k.startswith(f"imports/{VIDEO}/faces/") for k in faces[alice]["crops"])  # storage keys, no host path
    crop_files = [graph.settings.data_dir / k for k in faces[alice]["crops"]]
    assert len(crop_files) == 3 and all(p.is_file() and p.read_bytes().startswith(b"\xff\xd8\xff") for p in crop_files)
    assert all(graph.settings.data_dir.resolve() in p.parents for p in crop_files)
    assert not rows(driver, "MATCH (n) WHERE any(k IN keys(n) WHERE n[k] STARTS WITH '/9j/') RETURN n LIMIT 1")
    utterances = rows(driver, "MATCH (u:Utterance)-[:OF]->(:Voice {entity_id: $v}) RETURN u.text AS t ORDER BY t",
                      v=voice)
    assert [u["t"] for u in utterances] == ["Good morning, I am Alice.", "The coffee is ready."]

    # SAME_AS votes from the reinforced equivalence (edge weight 3 -> 2 votes); characters via argmax.
    same_as = rows(driver, "MATCH (f:Face)-[r:SAME_AS]->(v:Voice) RETURN f.entity_id AS f, v.entity_id AS v, "
                           "r.votes AS votes, r.evidence AS ev")
    assert [(r["f"], r["v"], r["votes"]) for r in same_as] == [(alice, voice, 2)]
    assert all(e.startswith(f"{VIDEO}#0|import:") for e in same_as[0]["ev"])
    chars = graph.characters_of([alice, voice, bob])
    assert chars[alice] == chars[voice] != chars[bob]

    video = rows(driver, "MATCH (v:Video {video_id: $v}) RETURN v.imported_from AS src, v.clip_count AS n", v=VIDEO)
    assert video == [{"src": "kitchen_30_5_-1_10_20_0.3_0.6.pkl", "n": 3}]


def test_search_finds_imported_memories(graph: MemoryGraph, tmp_path: Path, embedder: TextEmbedder) -> None:
    summary, ids = _import_sample(graph, tmp_path, embedder)
    bob = summary.entity_ids[f"face_{ids['bob']}"]
    char = graph.characters_of([bob])[bob]

    query = embedder.embed(["Who reads a newspaper about the football match?"])[0]
    found = graph.search.search(SearchSpec(query, videos=[VIDEO], k=1))
    assert [c.clip_index for c in found] == [2]
    texts = [m.text for m in found[0].memories]
    assert f"<character_{char}> reads a newspaper about the football match." in texts

    nodes = graph.search.search(SearchSpec(embedder.embed(["a bag of coffee beans"])[0], mode="node", videos=[VIDEO],
                                           k=1))
    assert nodes[0].clip_index == 0 and "coffee beans" in nodes[0].memories[0].text
    # Equivalence statements are votes, not shown memories (as for natively memorized clips).
    shown = graph.search.fetch_clip(VIDEO, 0)[0].memories
    assert [m.order_in_clip for m in shown] == [0, 1, 2, 4]


# ---------------------------------------------------------------------------------------------- idempotency


def test_reimport_is_refused_and_replace_reimports_without_duplicates(
        graph: MemoryGraph, driver: Driver, tmp_path: Path, embedder: TextEmbedder) -> None:
    first, _ = _import_sample(graph, tmp_path, embedder)
    before = totals(graph)

    with pytest.raises(VideoExistsError, match="already exists"):
        import_pickle(graph, tmp_path / "kitchen_30_5_-1_10_20_0.3_0.6.pkl", VIDEO, embedder)
    assert totals(graph) == before

    second = import_pickle(graph, tmp_path / "kitchen_30_5_-1_10_20_0.3_0.6.pkl", VIDEO, embedder, replace=True)
    assert second.replaced and not first.replaced
    assert totals(graph) == before  # same clips, memories, entities, evidence, votes, characters
    assert set(second.entity_ids.values()).isdisjoint(first.entity_ids.values())  # old entities were deleted
    faces_dir = graph.settings.data_dir / "imports" / VIDEO / "faces"
    alice, bob = second.entity_ids["face_1"], second.entity_ids["face_12"]
    assert sorted(p.name for p in faces_dir.iterdir()) == sorted(
        [f"face_{alice}_{n:04d}.jpg" for n in range(3)] + [f"face_{bob}_{n:04d}.jpg" for n in range(2)])
    assert not [p for p in faces_dir.parent.iterdir() if p.name.startswith(".faces-")]  # no staging leftovers

    assert graph.delete_video(VIDEO) == 3
    after = totals(graph)
    assert all(after[k] == 0 for k in ("Clip", "Memory", "FaceObs", "Utterance", "Face", "Voice", "Character",
                                       "SAME_AS", "MENTIONS", "IS"))


def test_bad_video_id_is_refused_before_reading(graph: MemoryGraph, tmp_path: Path, embedder: TextEmbedder) -> None:
    with pytest.raises(InvalidInputError, match="invalid source id"):
        import_pickle(graph, tmp_path / "missing.pkl", "../etc", embedder)


# ---------------------------------------------------------------------------------------------- safety


class _Evil:
    """A pickle payload that would run a shell command if the loader ever resolved `os.system`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("nested", [False, True], ids=["top-level", "inside-a-videograph"])
def test_malicious_pickle_is_refused_without_running_code(
        graph: MemoryGraph, tmp_path: Path, embedder: TextEmbedder, nested: bool) -> None:
    marker = tmp_path / "pwned"
    if nested:
        builder, _ = sample_graph()
        builder.graph.nodes[0].metadata["extra"] = _Evil(marker)
        payload = builder.dumps()
    else:
        payload = pickle.dumps(_Evil(marker))
    path = tmp_path / "evil.pkl"
    path.write_bytes(payload)

    with pytest.raises(ImportFormatError, match=r"forbidden global (os|posix|nt)\.system") as err:
        import_pickle(graph, path, VIDEO, embedder)
    assert "nothing from the file was executed" in str(err.value)
    assert not marker.exists()
    assert all(n == 0 for n in totals(graph).values())

    # The refusal happens in find_class, so even a plain pickle.load through our loader never runs it.
    with pytest.raises(ImportFormatError):
        load_videograph(path)
    assert not marker.exists()


@pytest.mark.parametrize("payload", [
    b"cbuiltins\neval\n(V1+1\ntR.",
    b"csubprocess\nPopen\n(VTrue\ntR.",
    b"cnumpy\nload\n(Vx.npy\ntR.",
    b"c__builtin__\napply\n(tR.",
    # getattr is only allowed for the one lookup protocols 2-3 need (VideoGraph.Node).
    b"cbuiltins\ngetattr\n(cvideograph\nVideoGraph\nV__init__\ntR.",
], ids=["eval", "Popen", "numpy.load", "py2-apply", "getattr"])
def test_other_forbidden_globals(tmp_path: Path, payload: bytes) -> None:
    path = tmp_path / "g.pkl"
    path.write_bytes(payload)  # protocol 0 text: GLOBAL, MARK, argument, TUPLE, REDUCE, STOP
    with pytest.raises(ImportFormatError, match="forbidden"):
        load_videograph(path)


def test_truncated_corrupt_empty_and_oversized_files(graph: MemoryGraph, tmp_path: Path,
                                                     embedder: TextEmbedder) -> None:
    builder, _ = sample_graph()
    full = builder.dumps()
    cases = {
        "truncated.pkl": (full[: len(full) // 2], "truncated"),
        "text.pkl": (b"this is a text file, not a pickle\n", "not a pickle"),
        "empty.pkl": (b"", "empty"),
    }
    for name, (data, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(ImportFormatError, match=message):
            import_pickle(graph, path, VIDEO, embedder)
    whole = builder.dump(tmp_path / "whole.pkl")
    with pytest.raises(ImportFormatError, match="size cap"):
        import_pickle(graph, whole, VIDEO, embedder, max_bytes=len(full) - 1)
    with pytest.raises(ImportFormatError, match="cannot read"):
        import_pickle(graph, tmp_path / "missing.pkl", VIDEO, embedder)
    assert all(n == 0 for n in totals(graph).values())


def test_valid_pickle_that_is_not_a_videograph(graph: MemoryGraph, tmp_path: Path, embedder: TextEmbedder) -> None:
    path = tmp_path / "dict.pkl"
    path.write_bytes(pickle.dumps({"nodes": {}, "edges": {}, "embedding": np.zeros(3)}))
    with pytest.raises(ImportFormatError, match="not a research VideoGraph"):
        import_pickle(graph, path, VIDEO, embedder)
    empty = GraphBuilder().dump(tmp_path / "empty_graph.pkl")
    with pytest.raises(ImportFormatError, match="no usable memory"):
        import_pickle(graph, empty, VIDEO, embedder)


@pytest.mark.parametrize("module", ["videograph", "mmagent.videograph"])
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_protocol_and_both_class_paths_load(tmp_path: Path, module: str, protocol: int) -> None:
    builder, ids = sample_graph(module=module)
    loaded = load_videograph(builder.dump(tmp_path / "g.pkl", protocol=protocol))
    node = loaded.nodes[ids["alice"]]
    assert node.type == "img" and len(node.embeddings) == 3
    assert np.allclose(node.embeddings[0], builder.graph.nodes[ids["alice"]].embeddings[0])
    assert loaded.edges[(ids["equivalence"], ids["voice"])] == 3.0


# ---------------------------------------------------------------------------------------------- degraded input


def test_dimension_mismatch_imports_entities_outside_the_vector_index(
        graph: MemoryGraph, driver: Driver, tmp_path: Path, embedder: TextEmbedder) -> None:
    builder, ids = sample_graph(face_dim=512, voice_dim=192)  # released pickles: ArcFace, ERes2NetV2
    summary = import_pickle(graph, builder.dump(tmp_path / "released.pkl"), VIDEO, embedder)

    assert (summary.faces, summary.voices, summary.faces_unindexed, summary.voices_unindexed) == (2, 1, 2, 1)
    assert (summary.face_dim, summary.voice_dim) == (512, 192)
    assert any("512-d" in w and "identity.face_dim is 128" in w for w in summary.warnings)
    if graph.settings.perception.speaker_embedder == "campplus":  # as wide as ERes2NetV2, but another model's space
        assert any("kept out of the voice index" in w and "ERes2NetV2" in w for w in summary.warnings)
    else:
        assert any("192-d" in w and f"identity.voice_dim is {graph.settings.identity.voice_dim}" in w
                   for w in summary.warnings)
    entities = rows(driver, "MATCH (e) WHERE e:Face OR e:Voice RETURN e.dim AS dim, e.centroid_unit AS unit, "
                            "size(e.exemplars) AS n, e.import_reason AS reason")
    assert sorted(r["dim"] for r in entities) == [192, 512, 512]
    assert all(r["unit"] is None and r["n"] > 0 and "another model" in r["reason"] for r in entities)
    probe = unit(np.random.default_rng(0), graph.settings.identity.face_dim).tolist()
    assert rows(driver, "CALL db.index.vector.queryNodes('face_centroid', 10, $q) YIELD node RETURN node",
                q=probe) == []
    # Memories, votes and characters do not depend on the identity model.
    assert (summary.episodic, summary.semantic, summary.votes, summary.characters) == (10, 3, 2, 2)


def test_unknown_tags_misaligned_contents_and_bad_nodes(graph: MemoryGraph, driver: Driver, tmp_path: Path,
                                                        embedder: TextEmbedder) -> None:
    b = GraphBuilder()
    rng = np.random.default_rng(3)
    face = b.face([unit(rng, 128) for _ in range(2)], ["not base64 !!", "also-bad"])
    voice = b.voice([unit(rng, graph.settings.identity.voice_dim) for _ in range(2)],
                    ["only one ASR line for two embeddings"] * 3)
    b.text(f"<face_{face}> talks to <face_99> while <voice_{voice}> hums.", np.int64(4))  # type: ignore[arg-type]
    broken = b.text("this node loses its timestamp", 4)
    del b.graph.nodes[broken].metadata["timestamp"]
    summary = import_pickle(graph, b.dump(tmp_path / "odd.pkl"), VIDEO, embedder)

    new_face, new_voice = summary.entity_ids[f"face_{face}"], summary.entity_ids[f"voice_{voice}"]
    assert summary.clips == 1 and summary.episodic == 1 and summary.skipped_nodes == 1
    assert summary.unresolved_tags == 1 and summary.face_crops == 0 and summary.asr_dropped == 3
    text = rows(driver, "MATCH (m:Memory) RETURN m.text AS t")[0]["t"]
    assert text == f"<face_{new_face}> talks to <face_?> while <voice_{new_voice}> hums."
    assert rows(driver, "MATCH (c:Clip) RETURN c.clip_index AS i, c.start_s AS s") == [{"i": 4, "s": 120.0}]
    # Every loss is reported: the skipped node, the unresolved tag, the invalid crops, the dropped ASR lines (and,
    # with CAM++ configured, the voice kept out of the index).
    assert len(summary.warnings) == 4 + _voices_kept_out(graph), summary.warnings


def test_dunder_state_is_refused(tmp_path: Path) -> None:
    """A second BUILD could call an instance ``__setstate__`` planted by the first: dunder state never loads."""
    builder, _ = sample_graph()
    builder.graph.__dict__["__setstate__"] = {"planted": True}
    with pytest.raises(ImportFormatError, match="forbidden attribute names"):
        load_videograph(builder.dump(tmp_path / "dunder.pkl"))


class _RawObjectScalar:
    """Asks numpy to read PyObject pointers from raw bytes: numpy refuses, and so must the loader, cleanly."""

    def __reduce__(self) -> tuple[Any, tuple[Any, bytes]]:
        from numpy._core.multiarray import scalar

        return scalar, (np.dtype([("a", "O")]), b"A" * 8)


def test_allowed_numpy_callables_with_hostile_arguments(tmp_path: Path) -> None:
    path = tmp_path / "scalar.pkl"
    path.write_bytes(pickle.dumps(_RawObjectScalar()))
    with pytest.raises(ImportFormatError, match="corrupt pickle"):
        load_videograph(path)
    # numpy.ndarray is a token, not the class: ndarray(huge shape) cannot reserve memory.
    path.write_bytes(b"cnumpy\nndarray\n((I1000000\nI1000000\nttR.")
    with pytest.raises(ImportFormatError, match="corrupt pickle"):
        load_videograph(path)
    path.write_bytes(b"cnumpy.core.multiarray\n_reconstruct\n(cnumpy\nndarray\n(I1000000000\ntC\x01btR.")
    with pytest.raises(ImportFormatError, match="forbidden numpy _reconstruct"):
        load_videograph(path)


def test_research_voices_stay_out_of_a_campplus_index_though_as_wide(
        graph: MemoryGraph, driver: Driver, tmp_path: Path, embedder: TextEmbedder) -> None:
    """Released pickles hold ERes2NetV2 voices, 192-d like CAM++'s: the same width is not the same model."""
    from tests.helpers.graph import variant, with_settings

    campplus = with_settings(graph, variant(graph.settings, perception={"speaker_embedder": "campplus"},
                                            identity={"voice_dim": 192}))
    builder, _ = sample_graph(face_dim=128, voice_dim=192)
    summary = import_pickle(campplus, builder.dump(tmp_path / "eres2net.pkl"), VIDEO, embedder)
    assert (summary.voices, summary.voices_unindexed, summary.faces_unindexed) == (1, 1, 0)
    assert any("ERes2NetV2" in w and "campplus" in w for w in summary.warnings)
    (voice,) = rows(driver, "MATCH (e:Voice) RETURN e.centroid_unit AS unit, e.import_reason AS reason")
    assert voice["unit"] is None and "another model" in voice["reason"]


def test_hostile_pickles_are_refused_before_the_graph_is_touched(
        graph: MemoryGraph, tmp_path: Path, embedder: TextEmbedder) -> None:
    """Issue 37's pickles (shared references, forged dtype states, huge declared shapes, deep nesting) through the
    real import: each is an `ImportFormatError` within seconds, and the graph stays empty and answering."""
    import time

    from tests.unit.test_safe_unpickle_hostile import hostile_pickles

    for name, (data, says) in hostile_pickles().items():
        path = tmp_path / f"{name}.pkl"
        path.write_bytes(data)
        start = time.monotonic()
        with pytest.raises(ImportFormatError, match=says):
            import_pickle(graph, path, VIDEO, embedder)
        assert time.monotonic() - start < 10, name
    assert all(n == 0 for n in totals(graph).values())
    assert graph.ex.read("graph/counts", source_id=None) is not None  # the server still answers
