"""The parts of `python -m bench.conversation` that decide what is asked and what is reported, without a server.

Why: the quality-by-size figure rests on asking the SAME questions at every size, only those whose evidence the
smallest size holds, and on the verdict line reading the fall correctly; the BM25 reader baseline rests on the
ingested turns being handed to it with their speakers and dates, and the scores on asking and scoring a chat's
questions re-dated as the chat was (a date-valued gold answer of a chat moved by years names the moved day). A
mistake in any of these changes a reported figure without failing the smoke (tests/e2e/test_bench_smoke.py only
runs the benchmark).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.conversation import Stored, pick_questions, query_texts, report, shifted_chats
from bench.conversation_gen import Manifest, Part, Spec
from m3graph.devkit.eval.beam import Batch, Chat, Message, Question
from m3graph.devkit.eval.beam_score import score

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
    assert [q.id for q in pick_questions([a, b], whole, cats, 10, True, False, unique=2)] == [
        "500K-9/knowledge_update/0", "500K-9/knowledge_update/1", "500K-9/temporal_reasoning/0",
        "500K-3/temporal_reasoning/0"]
    # only the never-copied chats are asked: a copy of 500K-3 would restate its facts later
    assert [q.id for q in pick_questions([a, b], whole, cats, 10, True, False, unique=1)] == [
        "500K-9/knowledge_update/0", "500K-9/knowledge_update/1", "500K-9/temporal_reasoning/0"]
    assert len(pick_questions([a, b], whole, cats, 2, True, False, unique=2)) == 2  # --asks bounds it
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


def test_questions_are_asked_and_scored_as_their_chat_was_redated() -> None:
    ku = Question("500K-5/knowledge_update/0", "knowledge_update", "What is the sprint deadline?", "April 5, 2024",
                  ("LLM response should mention: April 5, 2024",), (4,),
                  "LLM might recall the original April 1, 2024 deadline instead of the adjusted April 5, 2024")
    tr = Question("500K-5/temporal_reasoning/0", "temporal_reasoning", "How many days between the two?",
                  "13 days, from February 15, 2024 to February 28, 2024", ("LLM response should mention: 13 days",),
                  (2, 3))
    chats = [_chat("500K-9", [_q("500K-9", "knowledge_update", 0, (1,))]), _chat("500K-5", [ku, tr])]
    manifest = Manifest(Spec(("500K-9", "500K-5")), 10, parts=[
        Part("part-0001.json", "500K-9", 0, 0, []), Part("part-0002.json", "500K-5", 0, 4, []),
        Part("part-0003.json", "500K-9", 1, 8, ["Name"]), Part("part-0004.json", "500K-5", 1, 12, ["Name"])])
    first, moved = shifted_chats(chats, manifest)
    assert first == chats[0]  # the first chat keeps its dates
    assert moved.questions[0].gold == "April 5, 2028"  # copy 0's shift (4), not a later copy's
    assert moved.questions[1].gold == "13 days, from February 15, 2028 to February 28, 2028"
    answer = "The sprint deadline is April 5, 2028."  # what the re-dated chat says
    asked = moved.questions[0]
    assert score(asked.category, asked.question, asked.rubric, answer, asked.gold, asked.confusion).correct
    assert not score(ku.category, ku.question, ku.rubric, answer, ku.gold, ku.confusion).correct  # version 1's gold
    stale = "The sprint deadline is April 1, 2028."
    assert not score(asked.category, asked.question, asked.rubric, stale, asked.gold, asked.confusion).correct


def test_a_manifest_of_the_day_shifted_layout_is_not_reused(tmp_path: Path) -> None:
    old = {"version": 1, "spec": {"chats": ["500K-1"], "session_messages": 20, "gap_days": 7}, "tokens_target": 5,
           "tokens": 9, "parts": [{"file": "part-0001.json", "chat": "500K-1", "copy": 0, "shift_days": 0,
                                   "renamed": []}]}
    (tmp_path / "manifest.json").write_text(json.dumps(old))
    assert Manifest.read(tmp_path / "manifest.json") is None  # regenerated: its later chats' texts were not moved
