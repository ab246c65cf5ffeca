"""`m3graph eval retrieval` on a small fixed conversation: the product's search and both baselines in one run."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from m3graph.cli import main
from m3graph.devkit.eval.retrieval import BM25, load_dataset
from m3graph.graphdb.store import MemoryGraph
from m3graph.settings import Settings

DATA = Path(__file__).resolve().parents[1] / "data" / "conversations-mini"


def test_dataset_is_read_through_the_chat_loader() -> None:
    conv, questions = load_dataset(DATA / "mini-1.json")
    assert conv.source_id == "mini-1" and sum(len(s.turns) for s in conv.sessions) == 17
    assert [q.category for q in questions].count(5) == 1 and len(questions) == 8
    assert questions[0].source_id == "mini-1" and questions[0].evidence == ("D1:4",)
    short, _ = load_dataset(DATA / "mini-1.json", max_sessions=2)
    assert len(short.sessions) == 2


def test_bm25_prefers_rare_words_and_short_documents() -> None:
    bm = BM25(["the cat sat on the mat", "a dog ran", "the dog and the cat played in the long garden all day"])
    assert bm.top("dog", 3) == [1, 2]
    assert bm.top("cat dog", 1) == [2]
    assert bm.top("what is it", 3) == []


def test_eval_retrieval_scores_hybrid_against_both_baselines(graph: MemoryGraph, settings: Settings,
                                                             tmp_path: Path) -> None:
    out = tmp_path / "retrieval.json"
    args = ["eval", "retrieval", "--data", str(DATA), "--out", str(out)]
    run = CliRunner().invoke(main, args, obj=settings, catch_exceptions=False)
    assert run.exit_code == 0, run.output
    assert "ingested 17 turns" in run.output
    for method in ("hybrid", "vector", "exact_cosine", "bm25"):
        assert method in run.output
    report = json.loads(out.read_text())
    assert report["questions"] == 6
    assert report["excluded"] == {"category 5 (adversarial, no evidence)": 1,
                                  "evidence ids not among the stored turns": 1}
    clip, node = report["clip_all_evidence_recall@2"], report["evidence_turn_recall@10"]
    for table in (clip, node):
        assert set(table) == {"hybrid", "vector", "exact_cosine", "bm25"}
        assert all(0.0 <= v <= 1.0 for cats in table.values() for v in cats.values())
        assert set(table["hybrid"]) == {"all", "1 multi-hop", "2 temporal", "4 single-hop"}
    # Four single-hop questions over three sessions: the hybrid search finds every evidence session.
    assert clip["hybrid"]["4 single-hop"] == 1.0
    assert node["hybrid"]["all"] >= 0.75
    # The product's vector-only node search is the exact scan (no floor, exact path): the same recall.
    assert node["vector"]["all"] == node["exact_cosine"]["all"]
    assert report["latency"]["search_clip (graph)"]["n"] == 6
    assert report["clip_k"] == 2 and report["node_k"] == 10
    # Turns only (never the authors' events, observations, summaries); sessions keep their date.
    texts = [r["text"] for r in graph.ex.read("eval/memory_vectors", source_id="mini-1")]
    assert len(texts) == 17 and not any("SECRET" in t for t in texts)
    (second,) = graph.search.fetch_clip("mini-1", 1)
    assert second.started_at == datetime(2023, 4, 20, 18, 30, tzinfo=UTC)
    # A second run finds the conversation stored and re-embeds nothing.
    again = CliRunner().invoke(main, args, obj=settings, catch_exceptions=False)
    assert again.exit_code == 0 and "already stored" in again.output
    assert json.loads(out.read_text())["clip_all_evidence_recall@2"] == clip
