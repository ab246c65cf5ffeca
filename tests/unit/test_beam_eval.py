"""`m3graph eval beam` without a server or a model: the chat loader, which questions a slice asks, the BM25
baseline's lines and the deterministic scoring (m3graph/devkit/eval/beam.py, beam_score.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from m3graph.devkit.eval.beam import baseline_lines, load_chat, select, source_id
from m3graph.devkit.eval.beam_score import in_order, numbers, score
from m3graph.errors import InvalidInputError, NotFoundError


def write_chat(folder: Path) -> Path:
    """A two-batch BEAM-format chat with one question per category it exercises."""
    folder.mkdir(parents=True)
    batches = [
        {"batch_number": 1, "time_anchor": None, "turns": [
            [{"role": "user", "id": 0, "time_anchor": "March-01-2024", "content": "My Redis instance uses 150MB "
              "with 10,000 keys. ->-> 1,1"},
             {"role": "assistant", "id": 1, "content": "Noted, 150MB is fine."}],
            [{"role": "user", "id": 2, "content": "I have never used Jest."},
             {"role": "assistant", "id": 3, "content": "Jest is a test runner."}]]},
        {"batch_number": 2, "turns": [
            [{"role": "user", "id": 4, "time_anchor": "March-20-2024", "content": "Redis memory usage has now "
              "reached 200MB with 15,000 keys."},
             {"role": "assistant", "id": 5, "content": "Growth is expected."}],
            [{"role": "user", "id": 6, "content": "I wrote Jest tests with 90% coverage."},
             {"role": "assistant", "id": 7, "content": ""}]]},
    ]
    probing = {
        "knowledge_update": [{"question": "What is my Redis memory usage?", "answer": "200MB and 15,000 keys",
                              "potential_confusion": "the original 150MB and 10,000 keys",
                              "source_chat_ids": {"original_info": [0], "updated_info": [4]},
                              "rubric": ["LLM response should mention: 200MB", "LLM response should mention: "
                                         "15,000 keys"]}],
        "contradiction_resolution": [{"question": "Have I used Jest?", "ideal_answer": "You said both ...",
                                      "source_chat_ids": {"first_statement": [2], "second_statement": [6]},
                                      "rubric": ["LLM response should state: there is contradictory information",
                                                 "LLM response should mention: never used Jest",
                                                 "LLM response should mention: wrote Jest tests with 90% "
                                                 "coverage"]}],
        "temporal_reasoning": [{"question": "How many days between the two Redis readings?", "answer": "19 days",
                                "rubric": ["LLM response should mention: 19 days"]}],
    }
    (folder / "chat.json").write_text(json.dumps(batches), encoding="utf-8")
    (folder / "probing_questions.json").write_text(json.dumps(probing), encoding="utf-8")
    return folder


def test_a_chat_loads_with_dated_batches_and_without_generation_markers(tmp_path: Path) -> None:
    chat = load_chat(write_chat(tmp_path / "500K-9"))
    assert [b.when.strftime("%Y-%m-%d") for b in chat.batches] == ["2024-03-01", "2024-03-20"]
    assert chat.batches[0].messages[0].text == "My Redis instance uses 150MB with 10,000 keys."
    assert [m.id for b in chat.batches for m in b.messages] == [0, 1, 2, 3, 4, 5, 6]  # the empty message goes
    ku = next(q for q in chat.questions if q.category == "knowledge_update")
    assert ku.id == "500K-9/knowledge_update/0" and ku.cites == (0, 4)


def test_a_slice_asks_only_the_questions_whose_cited_messages_it_holds(tmp_path: Path) -> None:
    chat = load_chat(write_chat(tmp_path / "500K-9"))
    cats = ("knowledge_update", "contradiction_resolution", "temporal_reasoning")
    assert [q.category for q in select(chat, cats, 5, None)] == ["knowledge_update"]
    assert len(select(chat, cats, 7, None)) == 2  # the temporal item cites nothing: only with the whole chat
    assert len(select(chat, cats, None, None)) == 3
    assert [q.category for q in select(chat, cats, 2, 1)] == ["knowledge_update"]  # smoke: the earliest-cited
    assert [len(b.messages) for b in chat.sliced(3)] == [3]
    assert source_id(chat, 5, True) == "beam-500k-9-m5-speech" and source_id(chat, None, False) == "beam-500k-9"


def test_a_broken_folder_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        load_chat(tmp_path)
    (tmp_path / "chat.json").write_text("{}", encoding="utf-8")
    (tmp_path / "probing_questions.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InvalidInputError):
        load_chat(tmp_path)


def test_the_baseline_reads_the_best_messages_in_chat_order_with_their_dates(tmp_path: Path) -> None:
    chat = load_chat(write_chat(tmp_path / "500K-9"))
    lines = baseline_lines(chat.batches, "Redis memory usage keys", k=2)
    assert lines == ["[01 March 2024] User: My Redis instance uses 150MB with 10,000 keys.",
                     "[20 March 2024] User: Redis memory usage has now reached 200MB with 15,000 keys."]


def test_numbers_compare_as_numbers() -> None:
    assert numbers("15,000 keys at 200MB, 1.50 s") == {"15000", "200", "1.5"}


@pytest.mark.parametrize(("answer", "correct"), [
    ("It uses 200MB with 15,000 keys.", True),
    ("It grew from 150MB to 200MB with 15,000 keys.", False),  # the stale value is named
    ("It uses 200MB.", False),  # a nugget is missing
])
def test_knowledge_update_needs_the_new_value_and_not_the_stale_one(answer: str, correct: bool) -> None:
    rubric = ["LLM response should mention: 200MB", "LLM response should mention: 15,000 keys"]
    got = score("knowledge_update", "What is my Redis memory usage?", rubric, answer, "200MB and 15,000 keys",
                "the original 150MB and 10,000 keys")
    assert got.correct is correct


def test_a_contradiction_is_flagged_or_both_statements_are_named() -> None:
    rubric = ["LLM response should state: there is contradictory information",
              "LLM response should mention: never used Jest",
              "LLM response should mention: wrote Jest tests with 90% coverage"]
    assert score("contradiction_resolution", "Have I used Jest?", rubric, "Your statements conflict.").correct
    assert score("contradiction_resolution", "Have I used Jest?", rubric,
                 "You said you never used Jest, and that you wrote Jest tests with 90% coverage.").correct
    bare = score("contradiction_resolution", "Have I used Jest?", rubric, "Yes.")
    assert not bare.correct and bare.rubric == 0.0


def test_temporal_and_event_ordering() -> None:
    assert score("temporal_reasoning", "q", ["LLM response should mention: 19 days"], "About 19 days.").correct
    assert not score("temporal_reasoning", "q", ["LLM response should mention: 19 days"], "20 days").correct
    # a count in words is its number, on either side
    assert score("temporal_reasoning", "q", ["LLM response should contain: roughly two weeks"], "2 weeks").correct
    assert score("temporal_reasoning", "q", ["LLM response should mention: 2 days"], "Two days passed.").correct
    assert not score("temporal_reasoning", "q", ["LLM response should mention: 2 days"], "three days").correct
    items = ["Query optimization", "Schema design", "Migration script"]
    assert in_order(items, "First query optimization, then schema design, then the migration script.") == 1.0
    assert in_order(items, "The migration script, then schema design, then query optimization.") == pytest.approx(
        1 / 3)


def test_a_negated_statement_is_named_only_with_its_negation() -> None:
    rubric = ["LLM response should mention: You said you have never customized the spaCy pipeline",
              "LLM response should mention: you also mentioned having a customized pipeline with added matcher rules"]
    answer = "Yes, you have customized the spaCy pipeline with additional matcher rules."
    assert not score("contradiction_resolution", "Have I customized the pipeline?", rubric, answer).correct


def test_a_temporal_answer_needs_the_span_not_every_date() -> None:
    rubric = ["LLM response should mention: 2 days passed between April 10 and April 12"]
    assert score("temporal_reasoning", "q", rubric, "2 days.").correct
    assert not score("temporal_reasoning", "q", rubric, "12 days, from April 10.").correct
