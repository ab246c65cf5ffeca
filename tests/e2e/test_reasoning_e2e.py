"""Perception + memorization + control end to end with the real offline model (Qwen2.5 0.5B, llama.cpp).

The generated videos tm-a (two clips, two voices) and tm-b (one clip: Obama on screen, voice A says two known
lines) are ingested with the LLM memorizer; then the controller answers with the default model. What a small
model writes is not asserted word for word; what the system guarantees around it is: the model really ran (raw
output and tokens are stored), every memory it wrote names only this clip's entities, the transcript lines stay
searchable, the evidence the controller gathers holds the answer, the last round always yields an answer, and
the questions scripts/demo.sh asks are answered right by the default configuration (scored against the
manifest's ground truth).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from m3graph.devkit.eval.judge import answer_match
from m3graph.devkit.eval.testmedia_qa import TestQuestion, build_questions
from m3graph.devkit.testmedia import Manifest, build_test_media
from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.pipeline import ClipWork, ingest_video_inprocess
from m3graph.reasoning.control import make_controller
from m3graph.reasoning.memorize import LLMMemorizer, make_memorizer
from tests.helpers.graph import rows, variant, wipe, with_settings

REPO = Path(__file__).resolve().parents[2]
_ASK = re.compile(r'm3graph ask "(?P<question>[^"]+)" --video (?P<video>tm-[\w-]+)')


@pytest.fixture(scope="module")
def llm_graph(memory_graph: MemoryGraph, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryGraph]:
    wipe(memory_graph)
    media: Manifest = build_test_media(REPO / ".m3graph" / "testmedia")
    settings = variant(memory_graph.settings, identity={"face_threshold": None, "voice_threshold": None})
    settings = settings.model_copy(update={"data_dir": tmp_path_factory.mktemp("llm-data")})
    graph = with_settings(memory_graph, settings)
    memorizer = make_memorizer(settings)
    assert isinstance(memorizer, LLMMemorizer), "the default memorizer is the offline LLM"
    for video in ("tm-a", "tm-b"):
        ingest_video_inprocess(graph, text_embedder(settings), media.path(video), video, memorizer=memorizer)
    memorizer.model.close()
    yield graph


def demo_questions(manifest: Manifest) -> list[TestQuestion]:
    """The questions scripts/demo.sh asks about the generated videos, as the manifest's question set has them
    (with their ground truth): the demo may only ask what the manifest can check."""
    asked = [(m["question"], m["video"]) for m in _ASK.finditer((REPO / "scripts" / "demo.sh").read_text())]
    known = {(q.question, q.videos): q for q in build_questions(manifest)}
    missing = [a for a in asked if (a[0], (a[1],)) not in known]
    assert asked and not missing, f"demo.sh asks questions the manifest cannot check: {missing}"
    return [known[(question, (video,))] for question, video in asked]


def test_the_demo_questions_are_answered_right_by_the_default_model(llm_graph: MemoryGraph) -> None:
    """The main job's own questions, with the default offline configuration (model, rounds, search), scored
    by answer match against the manifest's ground truth."""
    settings = llm_graph.settings
    controller = make_controller(settings, llm_graph, text_embedder(settings))
    try:
        for q in demo_questions(build_test_media(REPO / ".m3graph" / "testmedia")):
            trace = controller.answer(q.question, list(q.videos), q.before_clip)
            assert answer_match(trace.answer, q.answer) == "yes", json.dumps(trace.to_dict(), indent=1)[:4000]
            assert all(r.action != "search_node" or r.knowledge for r in trace.rounds[:1])  # the search found memory
    finally:
        controller.model.close()


def test_llm_memorization_is_stored_validated_and_searchable(llm_graph: MemoryGraph) -> None:
    stored = json.loads(ClipWork(llm_graph.settings, "tm-b", 0).memory.read_text())
    assert stored["memorizer"].startswith("llm:") and stored["outcome"] in ("model", "fallback")
    assert stored["raw"] and stored["usage"]["prompt_tokens"] > 100 and stored["usage"]["completion_tokens"] > 0
    entities = set(stored["faces"].values()) | set(stored["voices"].values())
    mentioned = {r["id"] for r in rows(llm_graph, "MATCH (:Memory {video_id: 'tm-b'})-[:MENTIONS]->(e) "
                                                  "RETURN DISTINCT e.entity_id AS id")}
    assert mentioned and mentioned <= entities
    texts = " ".join(r["t"] for r in rows(llm_graph, "MATCH (m:Memory {video_id: 'tm-b'}) RETURN m.text AS t"))
    assert "mango" in texts.lower()


def test_controller_answers_from_evidence_with_the_small_model(llm_graph: MemoryGraph) -> None:
    settings = llm_graph.settings
    controller = make_controller(settings, llm_graph, text_embedder(settings))
    assert controller.mode == "tools"
    trace = controller.answer("What is the speaker's favourite fruit?", ["tm-b"])
    assert trace.outcome in ("answered", "forced") and trace.answer
    assert 2 <= len(trace.rounds) <= settings.control_rounds
    assert "mango" in json.dumps(trace.evidence).lower()
    assert trace.usage.prompt_tokens > 0 and trace.latency_s > 0
    assert all(r.action != "invalid" or r.note for r in trace.rounds)


def test_the_last_round_forces_an_answer_with_the_small_model(llm_graph: MemoryGraph) -> None:
    settings = llm_graph.settings
    controller = make_controller(settings.model_copy(update={"control_rounds": 1}), llm_graph,
                                 text_embedder(settings))
    trace = controller.answer("When does the library close?", ["tm-b"])
    steps = [r for r in trace.rounds if r.raw]  # model calls; round 0 is the automatic search
    assert len(steps) == 1 and steps[0].action == "answer" and trace.rounds[0].knowledge
    assert trace.outcome in ("forced", "abstained") and trace.answer
