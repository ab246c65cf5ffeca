# ruff: noqa: F811  (fixtures imported from graph_fixtures are requested by name)
"""Per-video and per-clip queries must seek an index, never scan a label (docs/benchmarks.md found scans)."""

from __future__ import annotations

from typing import Any

import pytest
from graph_fixtures import memory_graph  # noqa: F401

from m3graph.cypher import query
from m3graph.graphdb.store import MemoryGraph

VEC = [0.1] * 384
CASES: dict[str, dict[str, Any]] = {
    "search/count_candidates": {"videos": ["v"], "before_clip": None},
    "search/clips_exact": {"query": VEC, "videos": ["v"], "before_clip": None, "entity_ids": None, "exclude": [],
                           "min_score": 0.7, "k": 2},
    "search/nodes_exact": {"query": VEC, "videos": ["v"], "before_clip": None, "entity_ids": None, "k": 2},
    "memory/clip_state": {"clip_key": "v#0", "video_id": "v"},
    "memory/dedup_exact": {"items": [], "min_score": 0.9, "video_id": "v"},
    "memory/count_semantic": {"video_id": "v"},
    "delete/clip_memories": {"clip_key": "v#0", "video_id": "v"},
    "identity/face_resolved": {"video_id": "v", "clip_index": 0},
    "graph/video_progress": {"video_id": "v"},
}


def _operators(plan: dict[str, Any]) -> list[str]:
    return [plan["operatorType"].split("@")[0]] + [op for child in plan.get("children", []) for op in _operators(child)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_query_seeks_an_index(memory_graph: MemoryGraph, name: str) -> None:
    with memory_graph.ex.session() as session:
        plan = session.run("EXPLAIN " + query(name).text, CASES[name]).consume().plan
    ops = _operators(plan)
    assert not [op for op in ops if op in ("AllNodesScan", "NodeByLabelScan")], (name, ops)
    assert any("Seek" in op for op in ops), (name, ops)
