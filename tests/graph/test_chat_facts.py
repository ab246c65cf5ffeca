"""A numbered facts list through `m3graph ingest-chat` into the real Neo4j: one clip, one semantic memory per
fact in line order with its fact id as evidence, and re-ingesting the same list writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from m3graph.cli import main
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.model import ChatFormatError

FACTS = """Here is a list of facts:
0. Ann lives in Oslo.
1. The chess club of Oslo is led by Bob.

2. Ann lives in Bergen.
"""


def _memories(graph: MemoryGraph, source: str) -> list[dict[str, Any]]:
    with graph.ex.session() as s:
        return [r.data() for r in s.run("MATCH (m:Memory {video_id: $v}) RETURN m.kind AS kind, m.text AS text, "
                                       "m.source_ids AS ids, m.clip_index AS clip, m.memory_id AS id "
                                       "ORDER BY m.clip_index, m.order_in_clip", v=source)]


def _ingest(graph: MemoryGraph, *args: str) -> Any:
    result = CliRunner().invoke(main, ["ingest-chat", *args, "--json"], obj=graph.settings)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_facts_list_is_one_clip_of_semantic_memories_in_line_order(graph: MemoryGraph, tmp_path: Path) -> None:
    path = tmp_path / "facts.txt"
    path.write_text(FACTS, encoding="utf-8")
    (summary,) = _ingest(graph, str(path), "--source-id", "facts-a")  # detected as a facts list
    assert (summary["sessions_written"], summary["turns"], summary["episodic"], summary["semantic"]) == ([0], 3, 0, 3)
    assert graph.counts("facts-a")["Clip"] == 1
    mems = _memories(graph, "facts-a")
    assert [(m["kind"], m["text"], m["ids"], m["clip"]) for m in mems] == [
        ("semantic", "Ann lives in Oslo.", ["F0"], 0),
        ("semantic", "The chess club of Oslo is led by Bob.", ["F1"], 0),
        ("semantic", "Ann lives in Bergen.", ["F2"], 0)]

    before = (graph.counts("facts-a"), mems)
    (again,) = _ingest(graph, str(path), "--source-id", "facts-a", "--format", "facts")
    assert again["sessions_written"] == [] and again["sessions_skipped"] == 1
    assert (graph.counts("facts-a"), _memories(graph, "facts-a")) == before


def test_a_malformed_list_names_its_line_and_writes_nothing(graph: MemoryGraph, tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("0. Ann lives in Oslo.\n0. Ann lives in Bergen.\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["ingest-chat", str(path), "--format", "facts"], obj=graph.settings)
    assert isinstance(result.exception, ChatFormatError) and result.exception.line == 2
    assert "does not follow 0" in str(result.exception)
    assert _memories(graph, "bad") == []
