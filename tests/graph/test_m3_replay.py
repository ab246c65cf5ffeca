"""Replay of a recorded M3-contract conversation: the controller's transcript must match it exactly.

`tests/data/m3_replay_demo.json` holds one question over the demo memory, the assistant turns of a
thinking model (the Qwen3 `<think>` style M3-Agent-Control writes, including a malformed turn and a late
search), and the whole conversation the controller produced around them: system turn, `Searched knowledge:`
turns with their JSON, instructions, the repair message and the forced last round. Any change to the
protocol the released checkpoint was trained on shows up here as a diff. Re-record deliberately with
``M3GRAPH_RECORD_REPLAY=1 pytest tests/graph/test_m3_replay.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.demo import load_demo
from m3graph.reasoning.control import Controller
from m3graph.settings import Settings
from tests.helpers.chat_doubles import ScriptedModel

RECORDING = Path(__file__).resolve().parents[1] / "data" / "m3_replay_demo.json"
QUESTION = "What does Mia eat instead of coffee, and who offered her the coffee?"
ASSISTANT = [
    "<think>I have no knowledge yet. I should find Mia's character id first.</think>\n"
    "Action: [Search]\nContent: What is the character id of Mia",
    "<think>Mia is a character now. What does she eat?</think>\nI would like to look at her food.",
    "<think>Format! Search her food.</think>\nAction: [Search]\nContent: Mia declines the coffee and eats",
    "<think>Who offered coffee?</think>\nAction: [Search]\nContent: Who offers coffee to Mia?",
    "<think>Need more?</think>\nAction: [Search]\nContent: coffee cups",
    "<think>Last round, must answer.</think>\nAction: [Answer]\nContent: Mia eats a mango; Lily offered her "
    "the coffee.",
]


def _transcript(model: ScriptedModel) -> list[dict[str, str]]:
    final = model.requests[-1].messages
    return [{"role": m.role, "content": m.text} for m in final] + [{"role": "assistant", "content": ASSISTANT[-1]}]


def test_recorded_m3_conversation_replays_exactly(graph: MemoryGraph, settings: Settings) -> None:
    embedder = text_embedder(settings)
    load_demo(graph, embedder, "demo-kitchen")
    model = ScriptedModel(list(ASSISTANT), name="M3-Agent-Control")
    trace = Controller(model, graph, embedder, settings).answer(QUESTION, ["demo-kitchen"])
    got = {"question": QUESTION, "mode": trace.mode, "outcome": trace.outcome, "answer": trace.answer,
           "actions": [r.action for r in trace.rounds], "conversation": _transcript(model)}
    if os.environ.get("M3GRAPH_RECORD_REPLAY"):
        RECORDING.write_text(json.dumps(got, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    recorded = json.loads(RECORDING.read_text(encoding="utf-8"))
    assert got["mode"] == "m3"  # the model name selects the M3 contract
    assert got["actions"][-1] == "answer"
    assert got["outcome"] == "forced"
    for i, (a, b) in enumerate(zip(got["conversation"], recorded["conversation"], strict=True)):
        assert a == b, f"turn {i} differs from the recording"
    assert got == recorded
