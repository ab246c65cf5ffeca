"""`m3graph eval chat-files` on the session's Neo4j: the text-only baseline ingested through `ingest-chat`,
evidence recall@5 from the product's hybrid search, and a scripted answerer scored end to end.

The file system's half needs file ingestion (issue 23's `files` work); this file covers what the baseline alone
exercises: the generated conversations are valid input for the product's command, and the scoring is wired.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from m3graph.cli import main
from m3graph.devkit.chat_files import build
from m3graph.devkit.eval.chat_files import PreparedSet, evidence_recall, prepare, run, source_of
from m3graph.devkit.eval.judge import EntailmentJudge
from m3graph.embedding import text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.reasoning.llm.base import Usage
from m3graph.settings import Settings
from tests.helpers.chat_doubles import ScriptedModel
from tests.helpers.chat_files import stand_in_identity


@pytest.fixture(scope="module")
def baseline(memory_graph: MemoryGraph, settings: Settings, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[PreparedSet]:
    root = tmp_path_factory.mktemp("chat-files")
    build(root / "set", stand_in_identity(root / "identity"), n_conversations=2)
    prepared = prepare(root / "set")
    sources = [json.loads(p.read_text())["source_id"] for p in prepared.baseline]
    for source in sources:
        with suppress(NotFoundError):
            memory_graph.delete_video(source)
    result = CliRunner().invoke(main, ["ingest-chat", *map(str, prepared.baseline), "--format", "json"],
                                obj=settings)
    assert result.exit_code == 0, result.output
    yield prepared
    for source in sources:
        memory_graph.delete_video(source)


def test_text_questions_find_their_turn_in_the_baseline(baseline: PreparedSet, memory_graph: MemoryGraph,
                                                         settings: Settings) -> None:
    embedder = text_embedder(settings)
    text = [q for q in baseline.questions if q.category == "text"]
    recalls = [evidence_recall(memory_graph, embedder, q, "text-only")[0] for q in text]
    assert len(text) == 10 and sum(recalls) / len(recalls) >= 0.8, recalls
    # The baseline keeps the file's name in the sharing turn: "the PDF agreement" finds "... [shared file: ...pdf]".
    named = [q for q in baseline.questions if q.category == "file" and q.answer.startswith("contract-")]
    assert named and all(evidence_recall(memory_graph, embedder, q, "text-only") == (1.0, 0.0) for q in named)


@dataclass
class _Trace:
    answer: str | None
    outcome: str = "answered"
    rounds: list[Any] = field(default_factory=list)
    usage: Usage = field(default_factory=lambda: Usage(prompt_tokens=100, completion_tokens=5))
    latency_s: float = 0.01

    def to_dict(self) -> dict[str, Any]:
        return {"rounds": []}


class _GoldForText:
    """Answers text questions with their gold answer and abstains on the rest (what a file-blind reader does)."""

    def __init__(self, gold: dict[str, str]) -> None:
        self.gold = gold

    def answer(self, question: str, videos: list[str] | None = None, before_clip: int | None = None) -> _Trace:
        return _Trace(self.gold.get(question, "I don't know."))


def test_a_run_scores_the_baseline_per_category(baseline: PreparedSet, memory_graph: MemoryGraph,
                                                settings: Settings, tmp_path: Path) -> None:
    questions = [q for c in ("text", "document") for q in baseline.questions if q.category == c][4:16]
    gold = {q.question: q.answer for q in questions if q.category == "text"}
    judge = EntailmentJudge(ScriptedModel(["Yes"] * 100))
    report = run(settings, memory_graph, baseline, questions, tmp_path, _GoldForText(gold), judge, fresh=True,
                 systems=("text-only",))
    cells = report.to_dict()["by_system"]["text-only"]
    assert cells["text"]["answer_match"] == 1.0 and cells["document"]["answer_match"] == 0.0
    assert cells["document"]["recall_at_5"] is not None and cells["text"]["recall_at_5"] is None
    assert cells["document"]["file_recall_at_5"] == 0.0  # the baseline holds no file surrogate
    assert cells["all"]["tokens_per_question"] == 105.0
    assert {json.loads(line)["videos"][0] for line in (tmp_path / "chat-files-text-only.jsonl").open()} == {
        source_of(q, "text-only") for q in questions}
