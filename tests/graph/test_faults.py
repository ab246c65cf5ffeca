"""Fault injection, bounded: the LLM endpoint fails mid-video (a scripted OpenAI-compatible server on loopback).

Two seeded trials of `bench.faults.llm_fault_trial` (the full campaign is `python -m bench.faults`), and the
CLI's `m3graph memorize V --failed` against the same kind of endpoint.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.faults import ScriptedChatServer, ingest, stage_video, video_snapshot
from m3graph.cli import main
from m3graph.embedding import text_embedder
from m3graph.graphdb.clip_state import ClipState
from m3graph.graphdb.store import MemoryGraph
from m3graph.reasoning.llm.openai_http import OpenAIChatModel
from m3graph.reasoning.memorize import LLMMemorizer
from tests.helpers.graph import assert_no_orphans, with_settings


@pytest.fixture
def g(graph: MemoryGraph, tmp_path: Path) -> MemoryGraph:
    return with_settings(graph, graph.settings.model_copy(update={"data_dir": tmp_path / "data"}))


@pytest.mark.parametrize("seed", [1, 2])
def test_llm_faults_mid_video_lose_and_duplicate_nothing(g: MemoryGraph, seed: int) -> None:
    from bench.faults import llm_fault_trial

    result = llm_fault_trial(g, seed, clips=4, rate=0.5, prefix="tf")
    assert result.faults, "the trial injected no fault"
    assert result.rememorize_unchanged, "a failing re-memorization changed a memorized video"
    assert result.failed_marked, "the faulted clips are not exactly the memorize_failed ones"
    assert result.clips_lost == 0 and result.duplicate_memories == 0
    assert result.redo_equal and result.all_memorized, "redoing the failed clips did not give the clean result"
    assert_no_orphans(g)


def test_memorize_failed_command_redoes_what_the_endpoint_dropped(g: MemoryGraph) -> None:
    """The endpoint is down for the whole video: every clip ends memorize_failed with the perception memories;
    `m3graph memorize V --failed` with the endpoint back makes them memorized, from the model."""
    with ScriptedChatServer() as server:
        settings = g.settings.model_copy(update={"neo4j_uri": g.settings.bolt_uri, "llm": g.settings.llm.model_copy(
            update={"memorize": server.endpoint(timeout_s=0.5)})})  # the CLI connects to the suite's server
        g = with_settings(g, settings)
        plan = stage_video(settings, "tf-cli", 3, seed=5)
        server.mode = "down"
        memorizer = LLMMemorizer(OpenAIChatModel(server.endpoint(timeout_s=0.5)), settings)
        assert ingest(g, text_embedder(settings), memorizer, plan) == [0, 1, 2]
        assert {p.state for p in g.clip_states("tf-cli")} == {ClipState.MEMORIZE_FAILED}
        perception_only = video_snapshot(g, "tf-cli")
        assert perception_only["memories"] and len(perception_only["clips"]) == 3

        down = CliRunner().invoke(main, ["memorize", "tf-cli", "--failed"], obj=settings)
        assert down.exit_code != 0 and "previous memories were kept" in str(down.exception or down.output)
        assert video_snapshot(g, "tf-cli") == perception_only  # a second failure changes nothing

        shown = CliRunner().invoke(main, ["clips", "tf-cli"], obj=settings)
        assert shown.exit_code == 0, shown.output
        assert [line.split()[1] for line in shown.output.splitlines()[1:4]] == ["memorize_failed"] * 3, shown.output
        assert "HTTP 503" in shown.output and "3 failed; `m3graph memorize tf-cli --failed`" in shown.output

        server.mode = "ok"
        redo = CliRunner().invoke(main, ["memorize", "tf-cli", "--failed"], obj=settings)
        assert redo.exit_code == 0, redo.output
        assert {p.state for p in g.clip_states("tf-cli")} == {ClipState.MEMORIZED}
        texts = [m["text"] for m in video_snapshot(g, "tf-cli")["memories"]]
        assert any("seems to enjoy the conversation" in t for t in texts)  # the model's, not perception's
    assert_no_orphans(g)
