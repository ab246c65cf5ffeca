"""People seen without faces (issue 20): on a generated street clip with a KNOWN number of walkers (real
pedestrians cut from OpenCV's vtest.avi, fetched from the pinned opencv-python-headless sdist; see
m3graph.devkit.people_media), the HOG detector + tracker must count them within a stated tolerance and name each
one's direction, and the real pipeline (ingest into the real Neo4j, perception memorizer) must write a memory that
names the people and their movement while no face entity exists for them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from m3graph.devkit.people_media import WALKERS, build_people_video, score
from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.pipeline import ingest_video_inprocess
from m3graph.perception.people import detect_people
from tests.helpers.graph import rows, with_settings

REPO = Path(__file__).resolve().parents[2]
VIDEO_ID = "people-nofaces"


@pytest.fixture(scope="module")
def video() -> Path:
    return build_people_video(REPO / ".m3graph" / "people-media")


def test_counts_directions_and_times_match_the_known_walkers(video: Path) -> None:
    s = score(detect_people(video))  # the defaults: 1 fps, 640 px
    # Measured 0.117 (docs/people.md); the tolerance leaves room for codec changes.
    assert s.count_mae <= 0.25, s
    assert s.people_found == s.people_true == len(WALKERS), s
    assert all(true == found for true, found in s.motions), s.motions
    # Whole-body detection lags the half-body truth at the frame edge: measured +0.5..+1.0 s in, -1.0 s out.
    assert all(abs(e) <= 1.5 for e in s.enter_errors_s + s.leave_errors_s), s


@pytest.fixture(scope="module")
def ingested(memory_graph: MemoryGraph, video: Path, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[MemoryGraph]:
    work = tmp_path_factory.mktemp("people")
    graph = with_settings(memory_graph, memory_graph.settings.model_copy(update={"data_dir": work / "data"}))
    if rows(graph, "MATCH (v:Video {video_id: $v}) RETURN v.video_id", v=VIDEO_ID):  # an earlier run's leftovers
        graph.delete_video(VIDEO_ID)
    ingest_video_inprocess(graph, text_embedder(graph.settings), video, VIDEO_ID)
    yield graph
    graph.delete_video(VIDEO_ID)


def test_the_clip_memory_names_the_people_and_their_movement(ingested: MemoryGraph) -> None:
    texts = [r["t"] for r in rows(ingested, "MATCH (m:Memory)-[:IN_CLIP]->(:Clip {video_id: $v, clip_index: 0}) "
                                            "RETURN m.text AS t", v=VIDEO_ID)]
    assert rows(ingested, "MATCH (e:Face)-[]-(:Clip {video_id: $v}) RETURN e LIMIT 1", v=VIDEO_ID) == []
    # Four walkers, four at once for 1 s (12-13 s): "three at once" is within the measured +-0.5..1 s edge lag.
    assert any(re.fullmatch(r"Four people with no recognised face are seen in this clip, at most (three|four) at "
                            r"once\.", t) for t in texts), texts
    assert any(t.startswith("Two people walk from left to right: one enters at") for t in texts), texts
    assert any(t.startswith("One person walks from right to left: enters at") for t in texts), texts
    assert any(t.startswith("One person walks towards the camera: is there from the start") for t in texts), texts
    assert any("the scene is mostly" in t for t in texts)  # the scene line stays beside them
