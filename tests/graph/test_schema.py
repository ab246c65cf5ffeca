"""Schema migrations against the real server: idempotent, complete, and guarded against dimension drift."""

from __future__ import annotations

import pytest

from m3graph.errors import SchemaVersionError
from m3graph.graphdb.store import MemoryGraph
from m3graph.schema import MIGRATIONS, apply_migrations, check_schema
from m3graph.schema.migrations import UNIQUE_KEYS, applicable, memory_index_statement
from m3graph.settings import Settings
from tests.helpers.graph import rows, variant

CONSTRAINTS = {f"{k}_key" for k in UNIQUE_KEYS}


def _indexes(mg: MemoryGraph) -> dict[str, dict]:
    return {r["name"]: r for r in mg.ex.read("schema/list_indexes")}


def test_second_application_is_a_no_op(graph: MemoryGraph, settings: Settings) -> None:
    assert apply_migrations(graph.ex, settings) == []  # connect() already applied everything
    before = _indexes(graph)
    assert apply_migrations(graph.ex, settings) == []
    assert _indexes(graph).keys() == before.keys()
    versions = [r["version"] for r in graph.ex.read("schema/applied_migrations")]
    assert versions == [m.version for m in applicable(graph.ex)]


def test_migrations_rerun_from_scratch_are_idempotent(graph: MemoryGraph, settings: Settings) -> None:
    """Forgetting the migration records and dropping an index: everything runs again, DDL is IF NOT EXISTS."""
    with graph.ex.session() as session:
        session.run("MATCH (m:Migration) DELETE m").consume()
        session.run("DROP INDEX memory_text IF EXISTS").consume()
    try:
        assert "memory_text" not in _indexes(graph)
        assert apply_migrations(graph.ex, settings) == [m.version for m in applicable(graph.ex)]
        assert _indexes(graph)["memory_text"]["state"] == "ONLINE"
        assert apply_migrations(graph.ex, settings) == []
        assert rows(graph, "MATCH (m:Migration) RETURN count(m) AS n")[0]["n"] == len(applicable(graph.ex))
    finally:
        apply_migrations(graph.ex, settings)  # whatever happened, later tests get the full schema back


def test_constraints_exist(graph: MemoryGraph) -> None:
    found = {r["name"]: r for r in graph.ex.read("schema/list_constraints")}
    assert found.keys() >= CONSTRAINTS
    assert found["memory_key"]["labels"] == ["Memory"] and found["memory_key"]["properties"] == ["memory_id"]
    assert found["face_key"]["labels"] == ["Face"] and found["face_key"]["properties"] == ["entity_id"]


def test_vector_and_fulltext_indexes_have_configured_dims(graph: MemoryGraph, settings: Settings) -> None:
    idx = _indexes(graph)
    expected = {
        "face_centroid": ("Face", "centroid_unit", settings.identity.face_dim),
        "voice_centroid": ("Voice", "centroid_unit", settings.identity.voice_dim),
        "memory_embedding": ("Memory", "embedding", settings.memory.text_dim),
    }
    for name, (label, prop, dim) in expected.items():
        row = idx[name]
        assert row["type"] == "VECTOR"
        assert row["state"] == "ONLINE"
        assert row["labels"] == [label] and row["properties"][0] == prop  # then 2026's filter properties
        config = row["options"]["indexConfig"]
        assert config["vector.dimensions"] == dim
        assert config["vector.similarity_function"].lower() == "cosine"
        if "vector.quantization.type" in config:  # 2026.x: enabled=true means BINARY, false means NONE
            assert (config["vector.quantization.type"] != "NONE") is settings.vector_index.quantization
        else:
            assert config["vector.quantization.enabled"] is settings.vector_index.quantization
    if graph.ex.capabilities.vector_filters:  # 2026.x: the memory index's candidate list is configured
        config = idx["memory_embedding"]["options"]["indexConfig"]
        assert config["vector.default_search_expansion_factor"] == settings.vector_index.search_expansion
    ft = idx["memory_text"]
    assert ft["type"] == "FULLTEXT" and ft["state"] == "ONLINE"
    assert ft["labels"] == ["Memory"] and ft["properties"] == ["text"]
    for name in ("clip_time", "memory_time", "face_obs_time", "utterance_time", "memory_kind", "clip_start"):
        assert idx[name]["type"] == "RANGE"


def test_check_schema_accepts_matching_settings(graph: MemoryGraph, settings: Settings) -> None:
    check_schema(graph.ex, settings)


@pytest.mark.parametrize(("section", "field", "index"), [
    ("memory", "text_dim", "memory_embedding"),
    ("identity", "face_dim", "face_centroid"),
    ("identity", "voice_dim", "voice_centroid"),
])
def test_dimension_mismatch_is_refused(graph: MemoryGraph, settings: Settings, section: str, field: str,
                                       index: str) -> None:
    current = getattr(getattr(settings, section), field)
    other = variant(settings, **{section: {field: current + 16}})
    with pytest.raises(SchemaVersionError, match=index):
        check_schema(graph.ex, other)
    with pytest.raises(SchemaVersionError, match=index):
        apply_migrations(graph.ex, other)
    with pytest.raises(SchemaVersionError, match=index):
        MemoryGraph.connect(other).close()


def test_newer_schema_is_refused(graph: MemoryGraph, settings: Settings) -> None:
    with graph.ex.session() as session:
        session.run("CREATE (:Migration {version: 999, description: 'from the future'})").consume()
    try:
        with pytest.raises(SchemaVersionError, match="999"):
            check_schema(graph.ex, settings)
    finally:
        with graph.ex.session() as session:
            session.run("MATCH (m:Migration {version: 999}) DELETE m").consume()
    check_schema(graph.ex, settings)


def test_2026_only_migrations_follow_the_server_version(graph: MemoryGraph) -> None:
    """Migration 8 (filter properties on the memory index) runs exactly where the server has the capability."""
    caps = graph.ex.capabilities
    assert caps.edition == "community" or caps.edition == "enterprise"
    assert caps.vector_filters is caps.at_least(2026, 1)
    applied = {r["version"] for r in graph.ex.read("schema/applied_migrations")}
    gated = [m for m in MIGRATIONS if m.requires is not None]
    assert gated and all((m.version in applied) is bool(getattr(caps, m.requires)) for m in gated)
    memory = _indexes(graph)["memory_embedding"]
    assert memory["state"] == "ONLINE" and memory["properties"][0] == "embedding"
    if caps.vector_filters:
        assert memory_index_statement(graph.ex) == "schema/vector_memory_embedding_filtered"
        assert memory["properties"][1:] == ["video_id", "clip_index", "kind", "is_equivalence"], memory
    else:
        assert memory_index_statement(graph.ex) == "schema/vector_memory_embedding"
        assert memory["properties"] == ["embedding"]


def test_capabilities_are_read_once_per_connection(graph: MemoryGraph) -> None:
    first = graph.ex.capabilities
    assert graph.ex.capabilities is first
    rows_ = graph.ex.read("server/components")
    assert first.version == rows_[0]["version"]
