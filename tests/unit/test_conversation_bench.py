"""The parts of `python -m bench.conversation` that decide what is asked and what is reported, without a server.

Why: the quality-by-size figure rests on asking the SAME questions at every size, only those whose evidence the
smallest size holds, and on the verdict line reading the fall correctly; the BM25 reader baseline rests on the
ingested turns being handed to it with their speakers and dates. A mistake in any of these changes a reported
figure without failing the smoke (tests/e2e/test_bench_smoke.py only runs the benchmark).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bench.conversation import Stored, pick_questions, query_texts, report
from m3graph.devkit.eval.beam import Batch, Chat, Message, Question

D1, D2 = datetime(2024, 1, 5, 9, tzinfo=UTC), datetime(2024, 1, 20, 9, tzinfo=UTC)


def _q(chat: str, cat: str, i: int, cites: tuple[int, ...]) -> Question:
    return Question(f"{chat}/{cat}/{i}", cat, f"question {chat} {cat} {i}?", "gold", ("rubric",), cites)


def _chat(name: str, questions: list[Question]) -> Chat:
    return Chat(name, (Batch(1, D1, tuple(Message(i, "user", "x") for i in range(10))),), tuple(questions))


def test_batches_keep_speakers_dates_and_order() -> None:
    st = Stored(turns=[(D1, "a/c0/m0", "User: hi: there"), (D1, "a/c0/m1", "Assistant: hello"),
                       (D2, "a/c0/m2", "User: later")])
    batches = st.batches()
    assert [(b.when, [(m.role, m.text) for m in b.messages]) for b in batches] == [
        (D1, [("user", "hi: there"), ("assistant", "hello")]), (D2, [("user", "later")])]
    assert [m.id for b in batches for m in b.messages] == [0, 1, 2]


def test_quality_asks_only_what_the_smallest_size_holds() -> None:
    a = _chat("500K-9", [_q("500K-9", "knowledge_update", 0, (3,)), _q("500K-9", "knowledge_update", 1, (12,)),
                         _q("500K-9", "temporal_reasoning", 0, ()), _q("500K-9", "summarization", 0, (1,))])
    b = _chat("500K-3", [_q("500K-3", "temporal_reasoning", 0, (1,))])
    cats = ["knowledge_update", "temporal_reasoning"]
    partial = Stored(prefix={"500K-9": 10})  # messages 0-9 of 500K-9 stored, 500K-3 not yet
    assert [q.id for q in pick_questions([a, b], partial, cats, 10, True, False)] == ["500K-9/knowledge_update/0"]
    whole = Stored(prefix={"500K-9": 13, "500K-3": 2}, complete={"500K-9"})  # a question citing nothing: whole chat
    assert [q.id for q in pick_questions([a, b], whole, cats, 10, True, False)] == [
        "500K-9/knowledge_update/0", "500K-9/knowledge_update/1", "500K-9/temporal_reasoning/0",
        "500K-3/temporal_reasoning/0"]
    assert len(pick_questions([a, b], whole, cats, 2, True, False)) == 2  # --asks bounds it
    # without --quality any question of the chats present is timed, evidence stored or not
    assert len(pick_questions([a, b], partial, cats, 10, False, False)) == 3


def test_queries_take_each_chat_in_turn() -> None:
    a = _chat("a", [_q("a", "x", i, ()) for i in range(3)])
    b = _chat("b", [_q("b", "x", 0, ())])
    assert query_texts([a, b], 3) == ["question a x 0?", "question b x 0?", "question a x 1?"]


def _size(size: int, correct: int, n: int = 4) -> dict[str, Any]:
    latency = {"p50_ms": 100.0, "p95_ms": 200.0}
    return {"size": size, "ingest": {"tokens": size + 5, "turns": 10, "written_by_this_run": 10,
                                     "s_per_written_turn": 0.25},
            "search": {"loadavg": [3.0, 2.0, 1.0], "clip plain": latency, "embed": latency},
            "ask": {"questions": n, "m3graph": latency | {"correct": correct}, "baseline": {"correct": 1}}}


def test_report_reads_the_fall_against_the_bar() -> None:
    ok = report({"sizes": {"1000": _size(1000, 3), "100": _size(100, 3)}})
    assert "| search clip plain p50/p95 ms | 100 / 200 | 100 / 200 |" in ok  # columns sorted by size
    assert "answer rate 75% -> 75% (+0 points fall; within the 10-point bar)" in ok
    bad = report({"sizes": {"100": _size(100, 3), "1000": _size(1000, 2)}})
    assert "answer rate 75% -> 50% (+25 points fall; BEYOND the 10-point bar)" in bad
    assert "| search node plain p50/p95 ms | - / - | - / - |" in bad  # a variant not measured shows as such
