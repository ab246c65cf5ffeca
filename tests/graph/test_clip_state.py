"""Resolve and memorize as two steps with one per-clip state; failures never delete; files go with deletes.

Perception output is synthetic (clusters written to the cache files), the memorizer is scripted, the graph
and the text embedder are real.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from m3graph.embedding import text_embedder
from m3graph.graphdb.clip_state import ClipState
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import EquivalenceVote, FaceCluster, VoiceCluster
from m3graph.ingest.pipeline import (
    ClipWork,
    MemorizeFailedError,
    VideoPlan,
    clip_infos,
    commit_clip,
    memorize_clip,
    resolve_clip,
)
from m3graph.reasoning.perception_memorizer import ClipPerception, Memorization, PerceptionMemorizer
from tests.graph.test_memorize import _plan, _stage
from tests.helpers.graph import canonical_dump, face_cluster, rng, rows, unit, variant, voice_cluster, with_settings


@pytest.fixture
def g(graph: MemoryGraph, tmp_path: Path) -> MemoryGraph:
    return with_settings(graph, graph.settings.model_copy(update={"data_dir": tmp_path / "data"}))


def _story(g: MemoryGraph, video: str = "cs", clips: int = 3, seed: int = 7) -> VideoPlan:
    """The same person (one face, one voice) in every clip: a meta-clip each time."""
    gen = rng(seed)
    face, voice = unit(g.settings.identity.face_dim, gen), unit(g.settings.identity.voice_dim, gen)
    for i in range(clips):
        _stage(g.settings, video, i, [face_cluster(0, face, gen, times=[30.0 * i + 1, 30.0 * i + 2])],
               [voice_cluster(0, voice, gen, n=1, start=30.0 * i + 1)])
    plan = _plan(g.settings, video, clips)
    g.plan_clips(clip_infos(g.settings, plan, list(range(clips))))
    return plan


class _Scripted:
    """Fixed memories per clip, optionally failing or waiting on a barrier (to overlap two model calls)."""

    name = "scripted"

    def __init__(self, semantic: list[str], fail: BaseException | None = None,
                 barrier: threading.Barrier | None = None) -> None:
        self.semantic, self.fail, self.barrier = semantic, fail, barrier

    def memorize(self, clip: ClipPerception) -> Memorization:
        if self.barrier is not None:
            self.barrier.wait(timeout=30)
        if self.fail is not None:
            raise self.fail
        face = clip.faces[0][0]
        return Memorization(episodic=[f"<face_{face}> is in clip {clip.clip_index}."],
                            semantic=[s.replace("<face>", f"<face_{face}>") for s in self.semantic],
                            outcome="model")


def _states(g: MemoryGraph, video: str = "cs") -> list[str | None]:
    return [p.state.value if p.state else None for p in g.clip_states(video)]


def test_clip_moves_through_its_states_and_planning_never_goes_back(g: MemoryGraph) -> None:
    plan = _story(g, clips=2)
    assert _states(g) == ["planned", "planned"]
    g.mark_perceived("cs", 0)
    assert _states(g) == ["perceived", "planned"]
    embedder = text_embedder(g.settings)
    done = resolve_clip(g, plan, 0)
    assert _states(g) == ["resolved", "planned"]
    assert g.unresolved_before("cs", 1) == [] and g.unresolved_before("cs", 2) == [1]
    memorize_clip(g, embedder, _Scripted(["<face> likes tea."]), plan, 0, done)
    assert _states(g) == ["memorized", "planned"]
    g.plan_clips(clip_infos(g.settings, plan, [0, 1]))  # a resubmission plans again: nothing goes back
    assert g.mark_perceived("cs", 0) is False
    assert _states(g) == ["memorized", "planned"]
    [first, _] = g.clip_states("cs")
    assert first.at is not None and first.reason is None and first.resolved


def test_failed_rememorization_keeps_memories_entities_and_votes(g: MemoryGraph) -> None:
    """Regression (issue 9, Why 1): `commit_clip` deleted the clip when anything failed after identity
    resolution, taking a memorized clip's memories and its entities with it."""
    plan = _story(g, clips=2)
    embedder = text_embedder(g.settings)
    for i in range(2):
        commit_clip(g, embedder, _Scripted(["<face> likes tea."]), plan, i)
    before = canonical_dump(g)
    with pytest.raises(Exception, match="model server went away"):  # noqa: PT011 - the old code raised it bare
        commit_clip(g, embedder, _Scripted([], fail=RuntimeError("model server went away")), plan, 1)
    after = canonical_dump(g)
    assert [line for line in after if "Clip" not in line] == [line for line in before if "Clip" not in line]
    assert rows(g, "MATCH (m:Memory {video_id: 'cs'}) RETURN count(m) AS n")[0]["n"] == 3
    [_, second] = g.clip_states("cs")
    assert second.state == ClipState.MEMORIZE_FAILED
    assert "model server went away" in (second.reason or "") and "previous memories kept" in (second.reason or "")


def test_a_model_that_answers_garbage_keeps_the_model_memories(g: MemoryGraph) -> None:
    plan = _story(g, clips=1)
    embedder = text_embedder(g.settings)
    commit_clip(g, embedder, _Scripted(["<face> likes tea."]), plan, 0)
    memories = rows(g, "MATCH (m:Memory) RETURN m.text AS t ORDER BY t")

    class _Garbage(_Scripted):
        def memorize(self, clip: ClipPerception) -> Memorization:
            return Memorization(episodic=["fallback line"], semantic=[], outcome="fallback")

    report = memorize_clip(g, embedder, _Garbage([]), plan, 0)
    assert report.memorize_error is not None and report.memories == 0
    assert rows(g, "MATCH (m:Memory) RETURN m.text AS t ORDER BY t") == memories
    assert _states(g) == ["memorize_failed"]


def test_failed_resolve_leaves_the_graph_as_it_was(g: MemoryGraph) -> None:
    plan = _story(g, clips=2)
    commit_clip(g, text_embedder(g.settings), _Scripted([]), plan, 0)
    gen = rng(3)
    face = unit(g.settings.identity.face_dim, gen)
    # Two clusters with one label: identity resolution refuses them inside its transaction.
    _stage(g.settings, "cs", 1, [face_cluster(0, face, gen), face_cluster(0, face, gen)], [])
    before, counts = canonical_dump(g), g.counts()
    with pytest.raises(ValueError, match="repeat a label"):
        resolve_clip(g, plan, 1)
    after = canonical_dump(g)
    changed = sorted(set(before) ^ set(after))
    # Only the lines showing clip 1's node changed (its state): no node or relationship came or went.
    assert changed and all("'clip_key', \"'cs#1'\"" in line and "'state'" in line for line in changed)
    assert g.counts() == counts and len(before) == len(after)
    [_, second] = g.clip_states("cs")
    assert second.state == ClipState.RESOLVE_FAILED and "repeat a label" in (second.reason or "")
    assert g.unresolved_before("cs", 2) == [1]


def test_clips_memorized_concurrently_and_out_of_order_never_duplicate(g: MemoryGraph) -> None:
    """The model calls of clips 2 and 1 overlap (a barrier); both state the same fact about the same person.
    The memory write serializes per video, so the fact is one memory supported by both clips, exactly as
    when the clips are memorized one after the other in order."""
    embedder = text_embedder(g.settings)
    results = {}
    for video, concurrent in (("cs-seq", False), ("cs-par", True)):
        plan = _story(g, video, clips=3, seed=11)
        resolved = {i: resolve_clip(g, plan, i) for i in range(3)}
        memorize_clip(g, embedder, _Scripted(["<face> likes green tea."]), plan, 0, resolved[0])
        if concurrent:
            barrier = threading.Barrier(2)
            errors: list[BaseException] = []

            def run(i: int, barrier: threading.Barrier = barrier, plan: VideoPlan = plan,
                    resolved: dict = resolved, errors: list = errors) -> None:
                try:
                    memorize_clip(g, embedder, _Scripted(["<face> likes green tea."], barrier=barrier), plan, i,
                                  resolved[i])
                except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
                    errors.append(exc)

            threads = [threading.Thread(target=run, args=(i,)) for i in (2, 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert not errors
        else:
            for i in (1, 2):
                memorize_clip(g, embedder, _Scripted(["<face> likes green tea."]), plan, i, resolved[i])
        results[video] = rows(g, "MATCH (m:Memory {video_id: $v, kind: 'semantic'}) "
                                 "RETURN m.text AS text, size(m.support_clips) AS support", v=video)
        assert _states(g, video) == ["memorized"] * 3
    assert results["cs-par"] == results["cs-seq"] == [{"text": results["cs-seq"][0]["text"], "support": 3}]


def test_memorize_needs_a_resolved_clip(g: MemoryGraph) -> None:
    plan = _story(g, clips=1)
    with pytest.raises(LookupError, match="cs#0 is not resolved"):
        memorize_clip(g, text_embedder(g.settings), PerceptionMemorizer(), plan, 0)


def test_keep_policy_writes_nothing_for_a_new_clip(g: MemoryGraph) -> None:
    keep = with_settings(g, variant(g.settings, llm={"memorize_on_failure": "keep"}))
    plan = _story(keep, clips=1)
    with pytest.raises(MemorizeFailedError, match="cs#0"):
        commit_clip(keep, text_embedder(keep.settings), _Scripted([], fail=TimeoutError("no answer")), plan, 0)
    assert rows(keep, "MATCH (m:Memory) RETURN count(m) AS n")[0]["n"] == 0
    assert _states(keep) == ["memorize_failed"] and keep.clip("cs", 0) is not None


# ---------------------------------------------------------------------------------------------- files


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _stage_media(g: MemoryGraph, video: str, clips: int, people: int = 2) -> VideoPlan:
    """Clusters whose observations point at crop and snippet files, plus clip cuts and raw outputs."""
    gen = rng(5)
    faces = [unit(g.settings.identity.face_dim, gen) for _ in range(people)]
    voices = [unit(g.settings.identity.voice_dim, gen) for _ in range(people)]
    for i in range(clips):
        work = ClipWork(g.settings, video, i)
        fcs, vcs = [], []
        for p in range(people):
            fc = face_cluster(p, faces[p], gen, times=[30.0 * i + 1 + p * 10, 30.0 * i + 2 + p * 10])
            obs = []
            for k, o in enumerate(fc.observations):
                crop = work.crops / f"p{p}_{k}.jpg"
                crop.parent.mkdir(parents=True, exist_ok=True)
                crop.write_bytes(b"jpeg")
                obs.append(o.model_copy(update={"crop_uri": crop.resolve().as_uri()}))
            fcs.append(FaceCluster(label=p, observations=obs))
            vc = voice_cluster(p, voices[p], gen, n=1, start=30.0 * i + 1 + p * 10)
            snip = work.snippets / f"p{p}.wav"
            snip.parent.mkdir(parents=True, exist_ok=True)
            snip.write_bytes(b"wav")
            vcs.append(VoiceCluster(label=p, utterances=[vc.utterances[0].model_copy(
                update={"audio_uri": snip.resolve().as_uri()})]))
        _stage(g.settings, video, i, fcs, vcs)
        for path in (work.clip, work.audio, work.memory):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x")
    plan = _plan(g.settings, video, clips)
    g.plan_clips(clip_infos(g.settings, plan, list(range(clips))))
    embedder = text_embedder(g.settings)
    for i in range(clips):
        commit_clip(g, embedder, PerceptionMemorizer(), plan, i)
    return plan


def test_deleting_a_clip_or_video_deletes_its_files(g: MemoryGraph) -> None:
    _stage_media(g, "files", 2)
    root = g.settings.data_dir / "videos" / "files"
    assert any(f.startswith("crops/00001/") for f in _files(root))
    g.delete_clip("files", 1)
    left = _files(root)
    assert left and not [f for f in left if "00001" in f or "clip_1_" in f]
    assert [f for f in left if "00000" in f or "clip_0_" in f]
    g.delete_video("files")
    assert not root.exists()


def test_a_deleted_person_leaves_no_biometric_data(g: MemoryGraph) -> None:
    _stage_media(g, "bio", 2)
    root = g.settings.data_dir / "videos" / "bio"
    (face,) = [r["id"] for r in rows(g, "MATCH (o:FaceObs {cluster_label: 0})-[:OF]->(f:Face) "
                                        "RETURN DISTINCT f.entity_id AS id")]
    (voice,) = [r["id"] for r in rows(g, "MATCH (o:Utterance {cluster_label: 0})-[:OF]->(v:Voice) "
                                         "RETURN DISTINCT v.entity_id AS id")]
    for i in range(2):  # person 0's face and voice are one person (as a model's equivalence line would say)
        g.record_votes("bio", i, [EquivalenceVote(face_id=face, voice_id=voice, source="manual")], "manual")
    char = g.characters_of([face])[face]
    assert g.characters_of([voice])[voice] == char
    outside = g.settings.data_dir.parent / "outside.jpg"
    outside.write_bytes(b"not ours")
    summary = g.delete_character(char)
    assert summary["files"] > 0 and summary["cached_clusters"] == 4  # face and voice cluster in each clip
    left = _files(root)
    assert not [f for f in left if "/p0" in f], left  # the person's crops and snippets
    assert [f for f in left if "/p1" in f]  # the other person's stay
    assert not [f for f in left if f.startswith("memory/")]  # raw model outputs describing them
    for i in range(2):
        cached = json.loads(ClipWork(g.settings, "bio", i).faces.read_text())
        assert [c["label"] for c in cached] == [1]
        embeddings = {tuple(o["embedding"]) for c in cached for o in c["observations"]}
        assert embeddings and all(np.isfinite(e).all() for e in embeddings)
    assert outside.exists()
