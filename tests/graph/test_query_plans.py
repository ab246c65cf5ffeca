"""Per-video and per-clip queries must seek an index, never scan a label or a whole index (docs/benchmarks.md).

An empty graph proves little: the planner costs plans from index statistics, and on one fresh run it chose a
`NodeIndexScan` for three of these queries (issue 9, Why 6). So every query is planned on three graphs: empty,
one long video (the queried video is all the data: a seek on video_id filters nothing), and many videos; each after
`db.resampleOutdatedIndexes()` and `db.prepareForReplanning()`, so the plan is costed on the statistics of that data.
Queries whose best plan depends on the data carry an index hint (`USING INDEX`), which makes the seek certain.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from m3graph.cypher import query
from m3graph.graphdb.store import MemoryGraph
from tests.helpers.graph import wipe

VEC = [0.1] * 384
CASES: dict[str, dict[str, Any]] = {
    "search/count_candidates": {"videos": ["v"], "before_clip": None},
    "search/clips_exact": {"query": VEC, "videos": ["v"], "before_clip": None, "entity_ids": None, "exclude": [],
                           "min_score": 0.7, "k": 2},
    # One statement per search (5.26 variant; its exact path and the clip-memory fetch must seek by video).
    "search/ranked": {"query": VEC, "text": None, "videos": ["v"], "before_clip": None, "entity_ids": None,
                      "clip_text": None, "clips": None, "exact": True, "min_score": 0.6, "n": 300, "n_raw": 300,
                      "vector_weight": 0.5,
                      "context_weight": 0.2, "clip_text_weight": 0.5, "clip_prior": 1.0, "by_clip": True,
                      "words": ["ann"], "speaker_weight": 0.3, "months": [5], "years": [2023], "date_weight": 0.5,
                      "file_videos": ["v"], "file_kinds": [], "file_mimes": ["application/pdf"], "file_order": "first",
                      "file_weight": 0.5,
                      "exclude": [], "k": 2,
                      "episodic_only": False},
    "search/speech_lines": {"videos": ["v"], "before_clip": None, "cap": 20000},
    "memory/clip_state": {"clip_key": "v#0", "source_id": "v"},
    "memory/dedup_exact": {"items": [], "min_score": 0.9, "source_id": "v"},
    "memory/prepare": {"source_id": "v", "clip_key": "v#0", "face_ids": [1], "voice_ids": [100000],
                       "speaker_ids": []},
    "delete/clip_memories": {"clip_key": "v#0", "source_id": "v"},
    "identity/face_resolved": {"source_id": "v", "clip_index": 0},
    "identity/voice_resolved": {"source_id": "v", "clip_index": 0},
    "graph/video_progress": {"source_id": "v"},
}
# (videos, clips per video, faces, face observations per clip, memories per clip, semantic share)
SHAPES = {
    "empty": None,
    "one-long-video": (["v"], 60, 6, 120, 20, 0.1),
    "many-videos": (["v"] + [f"other{i}" for i in range(29)], 10, 40, 40, 15, 0.3),
}

_POPULATE = """
UNWIND $videos AS vid
MERGE (video:Video {video_id: vid})
WITH video, vid
UNWIND range(0, $clips - 1) AS ci
CREATE (c:Clip {video_id: vid, clip_index: ci, clip_key: vid + '#' + toString(ci), start_s: 30.0 * ci,
                end_s: 30.0 * ci + 30, status: 'done'})-[:OF]->(video)
WITH vid, ci, c
CALL (vid, ci, c) {
  UNWIND range(0, $obs - 1) AS j
  MATCH (e:Face {entity_id: j % $faces})
  CREATE (o:FaceObs {obs_key: c.clip_key + '/f' + toString(j), video_id: vid, clip_index: ci, cluster_label: j % 3})
  CREATE (o)-[:OF]->(e), (o)-[:IN_CLIP]->(c)
}
CALL (vid, ci, c) {
  UNWIND range(0, 3) AS j
  MATCH (e:Voice {entity_id: 100000 + j % 2})
  CREATE (u:Utterance {utt_key: c.clip_key + '/u' + toString(j), video_id: vid, clip_index: ci, cluster_label: j % 2})
  CREATE (u)-[:OF]->(e), (u)-[:IN_CLIP]->(c)
}
CALL (vid, ci, c) {
  UNWIND range(0, $mems - 1) AS j
  CREATE (m:Memory {memory_id: c.clip_key + '/m' + toString(j), video_id: vid, clip_index: ci,
                    first_clip: c.clip_key, support_clips: [c.clip_key], support: 1, text: 'memory',
                    kind: CASE WHEN j < $mems * $semantic THEN 'semantic' ELSE 'episodic' END,
                    slot_key: CASE WHEN j < $mems * $semantic THEN 'person ' + toString(j % 7) + ' · colour' END,
                    is_equivalence: false, entity_ids: [j % 5]})  // no embedding: plans do not depend on it
  CREATE (m)-[:IN_CLIP]->(c)
}
"""


def _operators(plan: dict[str, Any]) -> list[tuple[str, str]]:
    """(operator, details) of every step of the plan."""
    here = (plan["operatorType"].split("@")[0], str(plan.get("args", {}).get("Details", "")))
    return [here] + [op for child in plan.get("children", []) for op in _operators(child)]


def _populate(mg: MemoryGraph, shape: tuple[list[str], int, int, int, int, float]) -> None:
    videos, clips, faces, obs, mems, semantic = shape
    with mg.ex.session() as session:
        session.run("UNWIND range(0, $n - 1) AS i CREATE (:Face {entity_id: i})", n=faces).consume()
        session.run("UNWIND range(0, 1) AS i CREATE (:Voice {entity_id: 100000 + i})").consume()
        for vid in videos:  # one transaction per video keeps the heap small
            session.run(_POPULATE, videos=[vid], clips=clips, faces=faces, obs=obs, mems=mems,
                        semantic=semantic).consume()


@pytest.fixture(scope="module", params=sorted(SHAPES))
def shaped_graph(request: pytest.FixtureRequest, memory_graph: MemoryGraph) -> Iterator[MemoryGraph]:
    wipe(memory_graph)
    shape = SHAPES[request.param]
    if shape is not None:
        _populate(memory_graph, shape)
    with memory_graph.ex.session() as session:
        session.run("CALL db.resampleOutdatedIndexes()").consume()
        session.run("CALL db.awaitIndexes(300)").consume()
        session.run("CALL db.prepareForReplanning()").consume()
    yield memory_graph
    wipe(memory_graph)


@pytest.mark.parametrize("name", sorted(CASES))
def test_query_seeks_an_index(shaped_graph: MemoryGraph, name: str) -> None:
    with shaped_graph.ex.session() as session:
        plan = session.run("CYPHER replan=force EXPLAIN " + query(name).text, CASES[name]).consume().plan
    ops = _operators(plan)
    assert not [op for op, _ in ops if op in ("AllNodesScan", "NodeByLabelScan", "NodeIndexScan")], (name, ops)
    # Every case is per video: the seek must be on a video_id index, not on one that reads all videos (`kind`).
    assert any("Seek" in op and "video_id" in details for op, details in ops), (name, ops)


# Facts that change: a slot's history is read on every clip write that states a fact and by the history tool; both
# must seek the slot index (migration 13), not read every memory of a long source through its video_id.
SLOT_CASES: dict[str, dict[str, Any]] = {
    "facts/slot_assertions": {"source_id": "v", "slot_keys": ["person 3 · colour"]},
    "facts/history": {"source_id": "v", "subject_key": "person 3", "attribute_key": None, "k": 50},
}


@pytest.mark.parametrize("name", sorted(SLOT_CASES))
def test_slot_queries_seek_the_slot_index(shaped_graph: MemoryGraph, name: str) -> None:
    with shaped_graph.ex.session() as session:
        plan = session.run("CYPHER replan=force EXPLAIN " + query(name).text, SLOT_CASES[name]).consume().plan
    ops = _operators(plan)
    assert not [op for op, _ in ops if op in ("AllNodesScan", "NodeByLabelScan", "NodeIndexScan")], (name, ops)
    assert any("Seek" in op and "Memory(slot_key)" in details for op, details in ops), (name, ops)


# A question tied to an event ("when she lived in Lisbon") looks the event's fact up by name (issue 40): across all
# sources by the name alone (`Thing.name_key`, migration 19), in named sources by key; never by a label scan.
ANCHOR_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "every source": ({"sources": None, "names": ["lisbon", "porto"], "k": 50}, "Thing(name_key)"),
    "named sources": ({"sources": ["v", "other1"], "names": ["lisbon"], "k": 50}, "Thing(thing_key)"),
}


@pytest.mark.parametrize("case", sorted(ANCHOR_CASES))
def test_event_lookup_seeks_a_thing_index(shaped_graph: MemoryGraph, case: str) -> None:
    params, index = ANCHOR_CASES[case]
    with shaped_graph.ex.session() as session:
        plan = session.run("CYPHER replan=force EXPLAIN " + query("facts/anchor_versions").text,
                           params).consume().plan
    ops = _operators(plan)
    assert not [op for op, _ in ops if op in ("AllNodesScan", "NodeByLabelScan", "NodeIndexScan")], (case, ops)
    assert any("Seek" in op and index in details for op, details in ops), (case, ops)


def test_the_ranked_search_never_groups_memories_by_the_clip_hits(memory_graph: MemoryGraph) -> None:
    """The per-memory aggregation of the ranked search must not carry the clip documents' hits (a list of up to
    pool x overfetch maps) as a grouping key: each memory's group held a copy, so the statement's memory grew with
    pool x overfetch x memories (194 MB at the default pool on a 10^7-token conversation, 664 MB at a pool of 1,000,
    over the local server's 512 MB transaction limit; docs/scaling.md)."""
    names = ["search/ranked"] + (["search/ranked_2026"] if memory_graph.ex.capabilities.vector_filters else [])
    for name in names:
        params = CASES["search/ranked"] | ({"max_clip": 10} if name.endswith("2026") else {})
        with memory_graph.ex.session() as session:
            plan = session.run("EXPLAIN " + query(name).text, params).consume().plan
        grouped = [d for op, d in _operators(plan) if op == "EagerAggregation" and "sum(" in d]
        assert grouped, (name, _operators(plan))  # the per-memory sum is there...
        assert not [d for d in grouped if "clip_hits" in d], (name, grouped)  # ...keyed by the memory alone
