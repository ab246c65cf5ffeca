"""Two text models of one dimension never mix: the graph names the model its memory vectors belong to."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from m3graph.errors import SchemaVersionError
from m3graph.graphdb.reembed import reembed
from m3graph.graphdb.store import MemoryGraph
from m3graph.schema import apply_migrations, check_schema
from m3graph.schema.migrations import TEXT_MARK_VERSION, graph_text_model
from m3graph.settings import BGE_TEXT_MODEL, PACKAGED_TEXT_MODEL, Settings
from tests.helpers.graph import add_clip, mem, rng, rows, unit, variant, wipe


class _Stand:
    """A stand-in for the other model's vectors (the real bge is tested in tests/e2e/test_bge_embedder.py)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        g = rng(len(texts))
        return np.asarray([unit(self.dim, g) for _ in texts], dtype=np.float32).reshape(len(texts), self.dim)


def _other(settings: Settings) -> Settings:
    """The same-dimension model the session does not use (MiniLM and bge are both 384-d)."""
    name = PACKAGED_TEXT_MODEL if settings.text_model.model == BGE_TEXT_MODEL else BGE_TEXT_MODEL
    return variant(settings, text_model={"model": name})


def _memories(mg: MemoryGraph) -> None:
    add_clip(mg, "mark", 0)
    g = rng(7)
    mg.write_memories("mark", 0, [mem("episodic", f"Line {i} about the lake.", unit(mg.settings.memory.text_dim, g))
                                  for i in range(3)])


def test_another_text_model_of_the_same_dimension_is_refused(graph: MemoryGraph, settings: Settings) -> None:
    other = _other(settings)
    assert other.memory.text_dim == settings.memory.text_dim and other.text_model.name != settings.text_model.name
    apply_migrations(graph.ex, settings)  # the wiped graph is claimed again by the configured model
    _memories(graph)
    assert graph_text_model(graph.ex, settings) == settings.text_model.name
    check_schema(graph.ex, settings)
    with pytest.raises(SchemaVersionError, match=f"embedded by text model {settings.text_model.name} but the "
                                                 f"configured one is {other.text_model.name}.*m3graph reembed"):
        MemoryGraph.connect(other)
    try:
        reembed(graph.ex, other, "text", embedder=_Stand(other.memory.text_dim))
        check_schema(graph.ex, other)  # moved: the graph is the other model's now, and refuses the session's
        with pytest.raises(SchemaVersionError, match=f"embedded by text model {other.text_model.name}"):
            check_schema(graph.ex, settings)
    finally:
        wipe(graph)
        apply_migrations(graph.ex, settings)
    assert graph_text_model(graph.ex, settings) == settings.text_model.name


def test_a_graph_from_before_the_mark_is_minilm(graph: MemoryGraph, settings: Settings) -> None:
    """Memories stored before the mark existed (no mark, migration 11 not recorded) were MiniLM's at 384-d."""
    _memories(graph)
    minilm = variant(settings, text_model={"model": PACKAGED_TEXT_MODEL})
    bge = variant(settings, text_model={"model": BGE_TEXT_MODEL})
    rows(graph, "MATCH (m:Migration {version: $v}) DELETE m", v=TEXT_MARK_VERSION)
    rows(graph, "MATCH (k:EmbeddingModel) DELETE k")
    try:
        assert graph_text_model(graph.ex, settings) == "all-minilm-l6-v2"
        with pytest.raises(SchemaVersionError, match="embedded by text model all-minilm-l6-v2") as refused:
            check_schema(graph.ex, bge)
        # The refusal names both ways out: the move to bge, and the setting that keeps MiniLM.
        assert "`m3graph reembed --kind text --model bge-small-en-v1.5-q`" in str(refused.value)
        assert "M3GRAPH_TEXT_MODEL__MODEL=packaged" in str(refused.value)
        assert apply_migrations(graph.ex, minilm) == [TEXT_MARK_VERSION]  # the migration writes the inferred mark
        assert rows(graph, "MATCH (k:EmbeddingModel {kind: 'text'}) RETURN k.model AS m") == [
            {"m": "all-minilm-l6-v2"}]
    finally:
        wipe(graph)
        rows(graph, "MATCH (m:Migration {version: $v}) DELETE m", v=TEXT_MARK_VERSION)
        apply_migrations(graph.ex, settings)  # nothing stored: the session's model claims the graph
    assert graph_text_model(graph.ex, settings) == settings.text_model.name
