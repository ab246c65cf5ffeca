"""Perception end to end on generated videos with real faces and espeak voices, against real Neo4j.

The videos (see m3graph/devkit/testmedia.py) show Obama alone while voice A speaks (a meta-clip), then Biden
with voice B, then both; a second video shows another Obama photo with voice A; a third has no audio.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from m3graph.devkit.testmedia import Manifest
from m3graph.embedding import text_embedder
from m3graph.graphdb.clip_state import ClipState
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.pipeline import MemorizeFailedError, ingest_video_inprocess
from m3graph.reasoning.perception_memorizer import ClipPerception, Memorization
from tests.helpers.graph import perception_graph, variant, wipe, with_settings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ingested(memory_graph: MemoryGraph, media: Manifest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryGraph, dict[str, list]]]:
    wipe(memory_graph)
    graph = perception_graph(memory_graph, tmp_path_factory.mktemp("data"))
    embedder = text_embedder(graph.settings)
    reports = {vid: ingest_video_inprocess(graph, embedder, media.path(vid), vid)
               for vid in ("tm-a", "tm-b", "tm-silent")}
    yield graph, reports


def _rows(graph: MemoryGraph, query: str, **params: object) -> list[dict]:
    with graph.ex.session() as session:
        return [r.data() for r in session.run(query, params)]


def _face_of_person(graph: MemoryGraph, video: str, clip: int, media: Manifest) -> dict[str, set[int]]:
    """Person → face entities observed while only that person was on screen."""
    spec = media.video(video)
    out: dict[str, set[int]] = {}
    for row in _rows(graph, "MATCH (o:FaceObs {video_id: $v, clip_index: $c})-[:OF]->(f:Face) "
                            "RETURN o.frame_time_s AS t, f.entity_id AS id", v=video, c=clip):
        shot = next(s for s in spec.shots if s.start_s <= row["t"] < s.end_s)
        if len(shot.people) == 1:
            out.setdefault(shot.people[0], set()).add(row["id"])
    return out


def test_one_entity_per_person_and_per_voice(ingested: tuple[MemoryGraph, dict], media: Manifest) -> None:
    graph, _ = ingested
    counts = graph.counts()
    assert counts["Face"] == 2 and counts["Voice"] == 2
    a0 = _face_of_person(graph, "tm-a", 0, media)
    a1 = _face_of_person(graph, "tm-a", 1, media)
    b0 = _face_of_person(graph, "tm-b", 0, media)
    silent = _face_of_person(graph, "tm-silent", 0, media)
    obama = a0["obama"]
    assert len(obama) == 1
    assert a1["biden"] != obama and len(a1["biden"]) == 1
    assert b0["obama"] == obama  # another photo, another video: the same person
    assert silent["biden"] == a1["biden"]  # a video without audio still yields faces


def test_voices_and_transcripts_follow_the_manifest(ingested: tuple[MemoryGraph, dict], media: Manifest) -> None:
    graph, _ = ingested
    utts = _rows(graph, "MATCH (u:Utterance)-[:OF]->(v:Voice) RETURN u.video_id AS video, u.start_s AS s, "
                        "u.end_s AS e, u.text AS text, v.entity_id AS voice")
    voice_of: dict[str, set[int]] = {}
    hits = 0
    lines = [(v.source_id, line) for v in media.videos for line in v.lines]
    for video, line in lines:
        match = [u for u in utts if u["video"] == video and u["s"] < line.end_s and line.start_s < u["e"]]
        assert match, f"no utterance for {line.text!r} in {video}"
        voice_of.setdefault(line.voice, set()).update(u["voice"] for u in match)
        text = " ".join(u["text"].lower() for u in match)
        hits += any(k in text for k in line.keywords)
    assert all(len(ids) == 1 for ids in voice_of.values()), voice_of  # one Voice per espeak voice
    assert voice_of["A"] != voice_of["B"]
    assert hits >= len(lines) - 1, f"only {hits} of {len(lines)} transcripts contain their key words"
    assert {"coffee", "doctor", "mango", "library"} <= set(" ".join(u["text"].lower() for u in utts).split()) | {
        w.strip('.",') for u in utts for w in u["text"].lower().split()}


def test_meta_clip_votes_face_and_voice_together(ingested: tuple[MemoryGraph, dict], media: Manifest) -> None:
    graph, _ = ingested
    obama = _face_of_person(graph, "tm-a", 0, media)["obama"].pop()
    votes = _rows(graph, "MATCH (f:Face {entity_id: $f})-[r:SAME_AS]->(v:Voice) RETURN v.entity_id AS v, "
                         "r.votes AS votes, r.evidence AS evidence", f=obama)
    assert len(votes) == 1 and votes[0]["votes"] == 2  # tm-a clip 0 and tm-b clip 0 are both meta-clips
    assert all(e.endswith("|meta-clip") for e in votes[0]["evidence"])
    chars = graph.characters_of([obama, votes[0]["v"]])
    assert chars[obama] == chars[votes[0]["v"]]


def test_memories_are_searchable(ingested: tuple[MemoryGraph, dict]) -> None:
    graph, _ = ingested
    vector = text_embedder(graph.settings).embed(["Who talked about the doctor?"])[0].tolist()
    hits = graph.search.search(SearchSpec(vector, videos=["tm-a"], threshold=0.0))
    text = " ".join(m.text for c in hits for m in c.memories)
    assert "doctor" in text and "<character_" in text


def test_reingesting_changes_nothing(ingested: tuple[MemoryGraph, dict], media: Manifest) -> None:
    graph, _ = ingested
    before = graph.counts()
    ingest_video_inprocess(graph, text_embedder(graph.settings), media.path("tm-a"), "tm-a")
    assert graph.counts() == before


class _Broken:
    name = "broken"

    def memorize(self, clip: ClipPerception) -> Memorization:
        raise RuntimeError("model server went away")


_MEMORIES = "MATCH (m:Memory {video_id: $v}) RETURN m.memory_id AS id, m.text AS text, m.support_clips AS s ORDER BY id"
_ENTITIES = "MATCH (e) WHERE e:Face OR e:Voice RETURN e.entity_id AS id, e.exemplar_obs AS obs ORDER BY id"


def test_failed_rememorization_keeps_memories_and_entities(ingested: tuple[MemoryGraph, dict],
                                                           media: Manifest) -> None:
    """Regression (issue 9, Why 1): a memorization failure after resolve used to delete the clip, and with it
    good memories and entities of a clip that was already memorized (a resubmission while the LLM is down)."""
    graph, _ = ingested
    embedder = text_embedder(graph.settings)
    before, memories, entities = graph.counts(), _rows(graph, _MEMORIES, v="tm-a"), _rows(graph, _ENTITIES)
    assert memories
    with pytest.raises(Exception, match="went away"):  # noqa: B017,PT011 - today's code raises the bare error
        ingest_video_inprocess(graph, embedder, media.path("tm-a"), "tm-a", memorizer=_Broken())
    assert graph.counts() == before
    assert _rows(graph, _MEMORIES, v="tm-a") == memories and _rows(graph, _ENTITIES) == entities
    states = graph.clip_states("tm-a")
    assert [s.state for s in states] == [ClipState.MEMORIZE_FAILED] * 2
    assert all("went away" in (s.reason or "") and "previous memories kept" in (s.reason or "") for s in states)

    redo = ingest_video_inprocess(graph, embedder, media.path("tm-a"), "tm-a")  # the model is back
    assert [r.memorize_error for r in redo] == [None, None]
    assert [s.state for s in graph.clip_states("tm-a")] == [ClipState.MEMORIZED] * 2
    assert graph.counts() == before and _rows(graph, _MEMORIES, v="tm-a") == memories


@pytest.mark.parametrize("policy", ["perception", "keep"])
def test_failed_first_memorization_keeps_the_resolved_clip(ingested: tuple[MemoryGraph, dict], media: Manifest,
                                                          policy: str) -> None:
    """A new clip whose memorization fails stays resolved (its entities are what later clips' tags name), gets
    the perception memories or none as configured, and is marked memorize_failed; nothing is deleted."""
    graph, _ = ingested
    graph = with_settings(graph, variant(graph.settings, llm={"memorize_on_failure": policy}))
    vid = f"tm-b-{policy}"
    entities = {k: v for k, v in graph.counts().items() if k in ("Face", "Voice", "Character")}
    with pytest.raises(MemorizeFailedError, match="went away") as err:
        ingest_video_inprocess(graph, text_embedder(graph.settings), media.path("tm-b"), vid, memorizer=_Broken())
    assert f"m3graph memorize {vid} --failed" in str(err.value)
    [state] = graph.clip_states(vid)
    assert state.state == ClipState.MEMORIZE_FAILED and graph.clip(vid, 0) is not None
    assert {k: graph.counts()[k] for k in entities} == entities  # tm-b's Obama and voice A were known already
    written = _rows(graph, _MEMORIES, v=vid)
    if policy == "perception":
        assert written and "perception memories written" in (state.reason or "")
    else:
        assert written == [] and "no memories written" in (state.reason or "")
    graph.delete_video(vid)


def test_cached_perception_is_inspectable(ingested: tuple[MemoryGraph, dict]) -> None:
    graph, _ = ingested
    root = graph.settings.data_dir / "videos" / "tm-a"
    faces = json.loads((root / "perception" / "clip_0_faces.json").read_text())
    crops = [o["crop_uri"] for o in faces[0]["observations"]]  # storage keys (m3graph.storage), not host paths
    assert crops and all(k.startswith("videos/tm-a/crops/") and (graph.settings.data_dir / k).is_file() for k in crops)
    plan = json.loads((root / "plan.json").read_text())
    assert [(w["start_s"], w["end_s"]) for w in plan["windows"]] == [(0.0, 30.0), (30.0, 60.0)]
