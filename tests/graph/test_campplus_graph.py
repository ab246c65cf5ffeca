"""A graph whose voices came from one speaker embedder refuses settings that name another of a different size:
switching `perception.speaker_embedder` to CAM++ (192-d) on a Resemblyzer graph (256-d voice index) must not mix
the two, and points to `m3graph reembed --kind voice` (the schema's dimension guard, m3graph/schema/migrations.py)."""

from __future__ import annotations

import pytest

from m3graph.errors import SchemaVersionError
from m3graph.graphdb.store import MemoryGraph
from m3graph.schema.migrations import check_schema
from m3graph.settings import PerceptionConfig, Settings


def test_campplus_settings_on_a_resemblyzer_graph_are_refused(memory_graph: MemoryGraph) -> None:
    here = memory_graph.settings
    assert here.perception.speaker_embedder == "resemblyzer" and here.identity.voice_dim == 256
    check_schema(memory_graph.ex, here)
    campplus = Settings(local=here.local, perception=PerceptionConfig(speaker_embedder="campplus"))
    assert campplus.identity.voice_dim == 192
    with pytest.raises(SchemaVersionError, match=r"has 256 dimensions.*produces 192.*m3graph reembed --kind voice"):
        check_schema(memory_graph.ex, campplus)
