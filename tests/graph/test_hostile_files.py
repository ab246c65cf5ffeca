"""Hostile shared files against the real Neo4j (issue 37): each is refused on its own, the rest of the chat is
ingested, and nothing of a refused file reaches the graph or the disk.

The files come from `tests/unit/test_hostile_files.py` (generated at run time). Besides the refusals, a
session that fails after its files were stored must leave neither graph nodes nor stored copies, and the
server must still answer another session afterwards.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from m3graph.embedding import TextEmbedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.attachments import FILES_DIR
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from tests.helpers.graph import rows, variant, with_settings
from tests.unit.test_hostile_files import HOSTILE, SECONDS, hostile_file


@pytest.fixture
def fgraph(graph: MemoryGraph, tmp_path: Path) -> MemoryGraph:
    """The emptied store with its own data directory; no face models (the photo cases are refused earlier)."""
    s = variant(graph.settings.model_copy(update={"data_dir": tmp_path / "data"}), files={"photo_faces": False})
    return with_settings(graph, s)


def _conv(root: Path, files: list[str], source: str = "hostile-chat") -> Path:
    turns = [{"id": f"t{i + 1}", "speaker": "Ann", "text": f"file {i + 1}", "files": [f]} for i, f in enumerate(files)]
    data = {"source_id": source, "speakers": ["Ann"],
            "sessions": [{"id": "s1", "started_at": "2024-05-01T09:00:00Z", "turns": turns}]}
    path = root / "chat.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _on_disk(g: MemoryGraph) -> list[str]:
    base = g.settings.data_dir / FILES_DIR
    return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file()) if base.exists() else []


def _checksum(g: MemoryGraph) -> tuple[Any, ...]:
    nodes = rows(g, "MATCH (n) RETURN count(n) AS n, collect(DISTINCT labels(n)) AS labels")[0]
    rels = rows(g, "MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"]
    files = rows(g, "MATCH (f:File) RETURN collect(f.sha256) AS shas")[0]["shas"]
    return nodes["n"], sorted(map(tuple, nodes["labels"])), rels, sorted(files)


def test_hostile_files_are_refused_and_the_rest_is_ingested(fgraph: MemoryGraph, embedder: TextEmbedder,
                                                            tmp_path: Path) -> None:
    root = tmp_path / "conv"
    hostile = {case: hostile_file(root, case) for case in sorted(HOSTILE)}
    (root / "runs.csv").write_text("month,km\nMarch,42\nApril,55\n", encoding="utf-8")
    conv, _ = load_conversation(_conv(root, [name for name, _ in hostile.values()] + ["runs.csv"]))
    start = time.monotonic()
    summary = ingest_conversation(fgraph, conv, embedder, files_root=root)
    assert time.monotonic() - start < SECONDS * len(hostile)

    assert summary.files == 1 and summary.turns == len(hostile) + 1
    assert len(summary.files_refused) == len(hostile)
    for case, (name, says) in hostile.items():
        line = next((r for r in summary.files_refused if f"file {name}:" in r), "")
        assert line and re.search(says, line), (case, summary.files_refused)
    # Only the good file is in the graph and on disk; no .part copy anywhere.
    files = rows(fgraph, "MATCH (c:Clip)-[h:HAS_FILE]->(f:File) RETURN h.name AS name, f.stored AS stored")
    assert [f["name"] for f in files] == ["runs.csv"]
    assert rows(fgraph, "MATCH (m:Memory) WHERE m.file_sha256 IS NOT NULL "
                        "RETURN count(DISTINCT m.file_sha256) AS n")[0]["n"] == 1
    assert _on_disk(fgraph) == [files[0]["stored"].removeprefix(f"{FILES_DIR}/")]
    assert rows(fgraph, "RETURN 1 AS alive") == [{"alive": 1}]  # the server still answers


class _FailingEmbedder:
    """Embeds nothing: the session fails after its files were stored (a model that cannot load, a crash)."""

    dim = 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("the text model is gone")


def test_a_failed_session_leaves_no_stored_copy(fgraph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> None:
    root = tmp_path / "conv"
    root.mkdir()
    (root / "runs.csv").write_text("month,km\nMarch,42\nApril,55\n", encoding="utf-8")
    conv, _ = load_conversation(_conv(root, ["runs.csv"]))
    before = _checksum(fgraph)
    with pytest.raises(RuntimeError, match="the text model is gone"):
        ingest_conversation(fgraph, conv, _FailingEmbedder(), files_root=root)  # type: ignore[arg-type]
    assert _checksum(fgraph) == before
    assert _on_disk(fgraph) == []  # the copy stored for the session went with it
    # The same file ingested for real afterwards is stored once, and kept.
    summary = ingest_conversation(fgraph, conv, embedder, files_root=root)
    assert summary.files == 1 and len(_on_disk(fgraph)) == 1
