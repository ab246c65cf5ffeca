# ruff: noqa: F811  (fixtures imported from graph_fixtures are requested by name)
"""Perception + memorization + control end to end with the real offline model (Qwen2.5 0.5B, llama.cpp).

One generated 30 s video (tm-b: Obama on screen, voice A says two known lines) is ingested with the LLM
memorizer; then the controller answers with the same small model. What a 0.5B model writes is not asserted
word for word; what the system guarantees around it is: the model really ran (raw output and tokens are
stored), every memory it wrote names only this clip's entities, the transcript lines stay searchable, the
evidence the controller gathers holds the answer, and the last round always yields an answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from graph_fixtures import memory_graph, rows, variant, wipe, with_settings  # noqa: F401

from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.pipeline import ClipWork, ingest_video_inprocess
from m3graph.ingest.testmedia import Manifest, build_test_media
from m3graph.reasoning.control import make_controller
from m3graph.reasoning.memorize import LLMMemorizer, make_memorizer

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def llm_graph(memory_graph: MemoryGraph, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryGraph]:
    wipe(memory_graph)
    media: Manifest = build_test_media(REPO / ".m3graph" / "testmedia")
    settings = variant(memory_graph.settings, identity={"face_threshold": None, "voice_threshold": None})
    settings = settings.model_copy(update={"data_dir": tmp_path_factory.mktemp("llm-data")})
    graph = with_settings(memory_graph, settings)
    memorizer = make_memorizer(settings)
    assert isinstance(memorizer, LLMMemorizer), "the default memorizer is the offline LLM"
    ingest_video_inprocess(graph, text_embedder(settings), media.path("tm-b"), "tm-b", memorizer=memorizer)
    yield graph


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
    assert len(trace.rounds) == 1 and trace.rounds[0].action == "answer"
    assert trace.outcome == "forced" and trace.answer
