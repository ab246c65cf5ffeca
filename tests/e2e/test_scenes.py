"""Scenes without people still leave memories (issue 10): a generated video with no face and no speech is
ingested through the real pipeline into the real Neo4j, and every clip must hold at least one memory that says
what the frames show; the scene statistics themselves are checked on colour fields whose answer is known."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.pipeline import ingest_video_inprocess
from m3graph.perception import scene
from m3graph.perception.scene import describe_clip, describe_shots, dominant_colours, shots
from tests.helpers.graph import rows, with_settings

VIDEO_ID = "scenes-nopeople"


def _video(path: Path) -> Path:
    """40 s, no people: 12 s of a red field, 13 s of a dark blue one, 15 s of ffmpeg's moving test pattern,
    with a silent audio track (so the voice path runs and finds nobody)."""
    parts = [("color=c=red:s=320x240:r=10:d=12", "red"), ("color=c=0x000040:s=320x240:r=10:d=13", "navy"),
             ("testsrc=s=320x240:r=10:d=15", "test")]
    cmd = ["ffmpeg", "-nostdin", "-y", "-v", "error"]
    for source, _ in parts:
        cmd += ["-f", "lavfi", "-i", source]
    cmd += ["-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-filter_complex",
            "[0][1][2]concat=n=3:v=1[v]", "-map", "[v]", "-map", "3", "-t", "40", "-c:v", "libx264", "-preset",
            "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", str(path)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return path


def test_colour_fields_are_named_and_cuts_counted() -> None:
    red = np.zeros((24, 32, 3), np.uint8)
    red[..., 0] = 210
    blue = np.zeros((24, 32, 3), np.uint8)
    blue[..., 2] = 200
    assert dominant_colours([red]) == ("red",)
    frames = [(t * 0.5, red) for t in range(6)] + [(3 + t * 0.5, blue) for t in range(6)]
    found = shots(frames, 6.0)
    assert [(s.start_s, s.end_s, s.colours) for s in found] == [(0.0, 3.0, ("red",)), (3.0, 6.0, ("blue",))]
    assert all(s.motion == 0.0 for s in found)
    lines = [text for _, text in describe_shots(found, 60.0)]
    assert lines[0] == "From 60.0 s to 63.0 s the scene is mostly red, dim, still."
    assert lines[-1] == "The view changes 1 time in this clip (scene cuts)."


def test_no_video_no_description(tmp_path: Path) -> None:
    assert describe_clip(None, 0.0, 30.0) == []
    assert describe_clip(tmp_path / "missing.mp4", 0.0, 30.0) == []


@pytest.fixture(scope="module")
def ingested(memory_graph: MemoryGraph, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryGraph]:
    work = tmp_path_factory.mktemp("scenes")
    graph = with_settings(memory_graph, memory_graph.settings.model_copy(update={"data_dir": work / "data"}))
    if rows(graph, "MATCH (v:Video {video_id: $v}) RETURN v.video_id", v=VIDEO_ID):  # an earlier run's leftovers
        graph.delete_video(VIDEO_ID)
    ingest_video_inprocess(graph, text_embedder(graph.settings), _video(work / "nopeople.mp4"), VIDEO_ID)
    yield graph
    graph.delete_video(VIDEO_ID)


def test_every_clip_without_people_has_a_memory(ingested: MemoryGraph) -> None:
    found = rows(ingested, "MATCH (c:Clip {video_id: $v}) OPTIONAL MATCH (m:Memory)-[:IN_CLIP]->(c) "
                           "RETURN c.clip_index AS clip, collect(m.text) AS texts ORDER BY clip", v=VIDEO_ID)
    assert [r["clip"] for r in found] == [0, 1]
    assert rows(ingested, "MATCH (e:Face|Voice)-[]-(:Clip {video_id: $v}) RETURN e LIMIT 1", v=VIDEO_ID) == []
    first, second = (r["texts"] for r in found)
    assert first and second
    assert any("red" in t for t in first) and any("scene cuts" in t for t in first)  # red, then blue at 12 s
    assert any("30.0 s" in t and "motion" in t for t in second)  # the moving pattern fills clip 1


def test_black_bars_are_not_described_as_the_scene() -> None:
    """A bright 4:3 picture pillarboxed in a 16:9 frame is bright, not 'mostly black, dark'."""
    frames = []
    for k in range(4):
        f = np.zeros((90, 160, 3), dtype=np.uint8)
        f[:, 20:140] = (230, 230, 230)  # the picture, between two static black bars
        f[40:50, 60 + k:70 + k] = (200, 30, 30)  # a small moving red square
        frames.append((float(k), f))
    cropped = scene.crop_bars(frames)
    assert cropped[0][1].shape[:2] == (90, 120)
    (shot,) = scene.shots(cropped, 4.0)
    assert shot.colours[0] == "white" and "black" not in shot.colours
    assert shot.brightness > 0.7
    dark = [(float(k), np.full((90, 160, 3), 10, dtype=np.uint8)) for k in range(3)]
    assert scene.crop_bars(dark)[0][1].shape == (90, 160, 3)  # an all-dark scene is left whole
