# ruff: noqa: F811  (fixtures imported from graph_fixtures are requested by name)
"""`m3graph reembed`: a graph moves to a text model of another dimension, resumably, and nothing without it."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pytest
from click.testing import CliRunner
from graph_fixtures import add_clip, graph, mem, memory_graph, near, rng, unit, variant, wipe  # noqa: F401

from m3graph.cli import main
from m3graph.errors import SchemaVersionError
from m3graph.graphdb.reembed import ReembedNotImplementedError, index_dimension, reembed
from m3graph.graphdb.store import MemoryGraph
from m3graph.schema.migrations import check_schema
from m3graph.settings import Settings


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
    return {len(r["embedding"]) for r in mg.ex.read("eval/memory_vectors", video_id="re")}


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
        hits = moved.search.search_node(query, k=1, text="Line 1.2 about the garden.")
        assert [m.text for r in hits for m in r.memories] == ["Line 1.2 about the garden."]
        assert moved.search.search_node(query, k=1)[0].memories[0].text == "Line 1.2 about the garden."
    finally:  # the session's graph goes back to the configured model
        wipe(graph)
        reembed(graph.ex, settings, "text", embedder=WordHashEmbedder(settings.memory.text_dim))
    assert index_dimension(graph.ex, "text") == settings.memory.text_dim


def test_reembed_refuses_without_the_model_and_for_faces(graph: MemoryGraph, settings: Settings) -> None:
    _memories(graph)
    before = graph.ex.read("eval/memory_vectors", video_id="re")
    out = CliRunner().invoke(main, ["reembed", "--model", "/nonexistent/model-dir"], obj=settings)
    assert out.exit_code != 0 and "/nonexistent/model-dir" in str(out.exception or out.output)
    assert graph.ex.read("eval/memory_vectors", video_id="re") == before  # nothing touched
    assert index_dimension(graph.ex, "text") == settings.memory.text_dim
    for kind in ("face", "voice"):
        with pytest.raises(ReembedNotImplementedError, match=f"re-embedding {kind} entities is not implemented"):
            reembed(graph.ex, settings, kind)  # type: ignore[arg-type]
