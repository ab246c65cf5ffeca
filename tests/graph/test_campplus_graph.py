"""A graph whose voices came from one speaker embedder refuses settings that name another of a different size:
switching `perception.speaker_embedder` to CAM++ (192-d) on a Resemblyzer graph (256-d voice index) — the graph of
anyone who ingested before CAM++ became the default — must not mix the two, and points to
`m3graph reembed --kind voice` (the schema's dimension guard, m3graph/schema/migrations.py). The reverse (a CAM++
graph opened with Resemblyzer configured) is refused the same way."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from m3graph.errors import SchemaVersionError
from m3graph.graphdb.executor import Executor
from m3graph.graphdb.store import MemoryGraph
from m3graph.schema.migrations import _vector_params, check_schema
from m3graph.settings import PerceptionConfig, Settings

VOICE_INDEX = "schema/vector_voice_centroid"


def _embedder_settings(here: Settings, embedder: str) -> Settings:
    """The session's settings with another speaker embedder; voice_dim and thresholds follow it."""
    return Settings(local=here.local, perception=PerceptionConfig(speaker_embedder=embedder))


def _voice_index_for(ex: Executor, settings: Settings) -> None:
    """Re-creates the (empty-graph) voice index at `settings`' dimension, as migrations would have made it."""
    ex.schema("reembed/drop_voice_centroid")
    ex.schema(VOICE_INDEX, **_vector_params(settings, VOICE_INDEX))
    ex.schema("schema/await_indexes", timeout_s=120)


@pytest.fixture
def resemblyzer_graph(graph: MemoryGraph) -> Iterator[MemoryGraph]:
    """The session's emptied store with a 256-d voice index, as a Resemblyzer-built graph has; restored after."""
    resemblyzer = _embedder_settings(graph.settings, "resemblyzer")
    _voice_index_for(graph.ex, resemblyzer)
    try:
        yield graph
    finally:
        _voice_index_for(graph.ex, graph.settings)


def test_campplus_settings_on_a_resemblyzer_graph_are_refused(resemblyzer_graph: MemoryGraph) -> None:
    here = resemblyzer_graph.settings
    resemblyzer, campplus = (_embedder_settings(here, e) for e in ("resemblyzer", "campplus"))
    assert (resemblyzer.identity.voice_dim, campplus.identity.voice_dim) == (256, 192)
    check_schema(resemblyzer_graph.ex, resemblyzer)  # the graph's own embedder is accepted
    with pytest.raises(SchemaVersionError, match=r"has 256 dimensions.*produces 192.*`m3graph reembed --kind voice`"):
        check_schema(resemblyzer_graph.ex, campplus)


def test_the_other_embedder_on_the_session_graph_is_refused(memory_graph: MemoryGraph) -> None:
    here = memory_graph.settings
    check_schema(memory_graph.ex, here)
    other = "resemblyzer" if here.perception.speaker_embedder == "campplus" else "campplus"
    there = _embedder_settings(here, other)
    have, want = here.identity.voice_dim, there.identity.voice_dim
    assert have != want
    with pytest.raises(SchemaVersionError, match=rf"has {have} dimensions.*produces {want}.*reembed --kind voice"):
        check_schema(memory_graph.ex, there)
