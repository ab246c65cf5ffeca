"""Updates said in other words, through `m3graph ingest-chat` into the real Neo4j (no model): a paraphrased update
of a speaker's statement becomes a new version of the same slot, and the older one is retired; and the BEAM
harness (`m3graph.devkit.eval.beam.run`) ingests a chat through the product and asks through its `ask`
(the chat model scripted: the database, the ingestion and the controller are real)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from m3graph.devkit.eval.beam import load_chat, run
from m3graph.graphdb.store import MemoryGraph
from m3graph.reasoning.llm.base import ChatResult, Message, Usage
from tests.graph.test_speech_facts import _ingest, _slots
from tests.helpers.graph import rows
from tests.unit.test_beam_eval import write_chat

CHAT = """--- 2025-01-10T09:00:00Z
Nora: I live in Lisbon and my manager is Ana.
Bob: Nice.
Nora: The dashboard API's average response time is 400 ms.
Bob: That is slow.
Nora: The login latency is 900 ms.
Bob: Hm.
Nora: We fixed the cache. It's now down to 300 ms.
--- 2025-06-01T09:00:00Z
Nora: We moved to Porto last month. Ana left, Ben manages me now.
Bob: Congrats!
Nora: The dashboard API's average response time is now 250 ms.
"""


def test_paraphrased_updates_become_versions_of_the_earlier_slot(graph: MemoryGraph, tmp_path: Path) -> None:
    path = tmp_path / "nora.txt"
    path.write_text(CHAT, encoding="utf-8")
    _ingest(graph, path, "chat-nora-updates")
    slots = _slots(graph, "chat-nora-updates")
    assert slots["nora · live in"] == [("Lisbon", False, False), ("Porto", False, True)]  # "we moved"
    assert slots["nora · manager"] == [("Ana", False, False), ("Ben", False, True)]  # "Ben manages me now"
    # "it's now down to 300 ms": the speaker's latest time metric of the session (the login latency)
    assert slots["nora · login latency"] == [("900 ms", False, False), ("300 ms", False, True)]
    assert slots["nora · dashboard api average response time"] == [("400 ms", False, False),
                                                                   ("250 ms", False, True)]
    old = rows(graph, "MATCH (n:Memory {video_id: 'chat-nora-updates', slot_value: 'Ben'})-[:SUPERSEDES]->(o) "
                      "RETURN o.slot_value AS v")
    assert old == [{"v": "Ana"}]


class _Reader:
    """Answers every request with one fixed reply; records what it was shown."""

    name = "scripted"
    supports_images = supports_video = supports_tools = False
    supports_json_schema = True

    def __init__(self) -> None:
        self.seen: list[str] = []

    def chat(self, messages: Sequence[Message], **_: Any) -> ChatResult:
        self.seen.append("\n".join(m.text for m in messages))
        text = '{"answer": "You said you never used Jest, but these statements conflict.", "next_query": null}'
        return ChatResult(text=text, usage=Usage(10, 10), latency_s=0.0, finish_reason="stop", model="scripted")

    def close(self) -> None:
        pass


def test_the_beam_harness_ingests_through_the_product_and_asks_through_ask(
        graph: MemoryGraph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader = _Reader()
    monkeypatch.setattr("m3graph.reasoning.llm.make_chat_model", lambda *_: reader)
    chat = load_chat(write_chat(tmp_path / "500K-9"))
    out = tmp_path / "out"
    report = run(graph.settings, graph, [chat], ("contradiction_resolution", "knowledge_update"), 7, None, out)
    assert report.messages == 7 and report.ingest_s is not None
    turns = rows(graph, "MATCH (m:Memory {video_id: 'beam-500k-9-m7', kind: 'episodic'}) RETURN count(m) AS n")
    assert turns == [{"n": 7}]  # every message of the slice, one dated session per batch
    records = [json.loads(line) for line in (out / "beam.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {(r["category"], r["system"]) for r in records} == {
        (c, s) for c in ("contradiction_resolution", "knowledge_update") for s in ("m3graph", "baseline")}
    conflict = next(r for r in records if r["category"] == "contradiction_resolution" and r["system"] == "m3graph")
    assert conflict["correct"] and "conflict" in conflict["answer"]  # the answer came back through ask (the reader's
    # or the answer step's own naming of the conflict: either is the product's answer)
    assert not any("90% coverage" in seen and "contradictory information" in seen for seen in reader.seen)
    traces = [json.loads(line) for line in (out / "beam-traces.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [t["id"] for t in traces] == [r["id"] for r in records if r["system"] == "m3graph"]
    assert all(t["rounds"] and t["evidence"] for t in traces)  # what reading a failure needs
    summary = json.loads((out / "beam-summary.json").read_text(encoding="utf-8"))
    scored = summary["scores"]["m3graph"]["contradiction_resolution"]
    assert scored["correct"] == 1 and scored["n"] == 1 and scored["rubric"] > 0
    again = run(graph.settings, graph, [chat], ("knowledge_update",), 7, None, out)
    assert again.ingest_s is None  # already stored: nothing written twice
