"""Values compared as numbers with units, a person's changed value found without a slot (issue 38), and the BEAM
scorer accepting a short gold answer written another way; constructed lines, no database, no model."""

from __future__ import annotations

from datetime import date

import pytest

from m3graph.devkit.eval.beam_score import score
from m3graph.reasoning.answer_checks import Checks
from m3graph.reasoning.as_of import AsOf
from m3graph.reasoning.quantities import holds, quantities
from m3graph.reasoning.value_updates import change_note, changes, newest_value, values

DATES = {"CLIP_0": "10 January 2024", "CLIP_1": "21 February 2024", "CLIP_2": "3 April 2024"}


@pytest.mark.parametrize(("text", "other", "same"), [
    ("180ms", "180 ms", True),
    ("180ms", "180 milliseconds", True),
    ("180ms", "0.18 s", True),
    ("180ms", "180", True),  # a bare number for a number with a unit
    ("180ms", "180 seconds", False),
    ("1GB", "1,000 MB", True),
    ("5 out of 5", "5/5", True),
    ("7 out of 7", "7", False),  # a fraction is both its numbers
    ("19 out of 20", "18 out of 20", False),
    ("15,000 keys", "15000", True),
])
def test_values_compare_as_numbers_with_units(text: str, other: str, same: bool) -> None:
    assert holds(other, quantities(text)[0]) is same


def test_times_of_day_and_versions_are_no_values() -> None:
    assert [q.text for q in quantities("at 10:30 on v3.2.1 it took 0.5s")] == ["0.5s"]


def _shown(*lines: tuple[str, str]) -> list[tuple[str, str]]:
    return list(lines)


ACCURACY = _shown(
    ("CLIP_0", "User <character_1>: I've reviewed 5 flawed proofs, but my error detection accuracy, which is "
               "currently at 85%, could be better."),
    ("CLIP_0", "Assistant <character_2>: Your accuracy of 85% is a good start; aim for 95%."),
    ("CLIP_1", "User <character_1>: I'm aiming to reduce my error rate to below 10% this month."),
    ("CLIP_2", "User <character_1>: I was wondering how my error detection accuracy for flawed proofs increased "
               "to 95% after reviewing more of them."),
)
QUESTION = "What is my current accuracy percentage for detecting errors in induction proofs?"


def test_a_value_a_person_restates_in_other_words_is_a_change() -> None:
    found = changes(QUESTION, ACCURACY, DATES)
    assert len(found) == 1
    assert [v.quantity.text for v in found[0].said] == ["85%", "95%"]  # the assistant and the target take no part
    assert found[0].value.text == "95%"
    note = change_note(found)
    assert note is not None
    assert "[10 January 2024] User: I've reviewed" in note
    assert note.splitlines()[-1].endswith("(later, holds now: 95%)")


def test_targets_bounds_and_the_assistants_numbers_are_no_values() -> None:
    found = {v.quantity.text for v in values(ACCURACY, DATES)}
    assert "10%" not in found  # "to below 10%": a bound, "aiming": a target
    assert {v.speaker for v in values(ACCURACY, DATES)} == {"User"}  # the assistant speaks of "your" accuracy


def test_an_older_value_in_the_answer_becomes_the_one_that_holds() -> None:
    found = changes(QUESTION, ACCURACY, DATES)
    assert newest_value("85%", found) == ("95%", "85%")
    assert newest_value("It is 85 percent.", found) == ("It is 95%.", "85 percent")
    assert newest_value("95%, up from 85%", found) is None  # it gives the one that holds
    assert newest_value("I don't know", found) is None


def test_as_of_a_day_the_value_said_by_then_holds() -> None:
    found = changes(QUESTION, ACCURACY, DATES, as_of=date(2024, 3, 1))
    assert found[0].value.text == "85%"
    assert newest_value("95%", found) == ("85%", "95%")


def test_an_approximate_value_is_a_value_and_a_bound_is_not() -> None:
    lines = _shown(("CLIP_0", "User <character_1>: My batch memory usage per session is around 180MB under 50 users."),
                   ("CLIP_1", "User <character_1>: I've got my batch memory usage per session down to about 140MB."))
    found = changes("What is the typical memory usage per session for batch processing?", lines, DATES)
    assert [v.quantity.text for v in found[0].said] == ["180MB", "140MB"]  # "under 50 users": a condition


def test_a_value_about_something_else_is_no_change() -> None:
    lines = _shown(("CLIP_0", "User <character_1>: My Redis cache uses 150MB of memory."),
                   ("CLIP_1", "User <character_1>: I've got my error detection accuracy to 95% now."))
    assert changes(QUESTION, lines, DATES) == []
    assert changes("How much memory does my Redis cache use?", lines, DATES) == []  # one value only
    again = _shown(("CLIP_0", "User <character_1>: My error detection accuracy is 85%."),
                   ("CLIP_1", "User <character_1>: My error detection accuracy is 85%."))
    assert changes(QUESTION, again, DATES) == []  # said twice, not changed


def test_a_fraction_changed_with_the_count_beside_it() -> None:
    lines = _shown(("CLIP_0", "User <character_1>: I've completed 5 sequence definition problems, scoring 4/5 "
                              "correct on identifying arithmetic vs geometric sequences."),
                   ("CLIP_1", "User <character_1>: I've now scored 5/5 correct on identifying arithmetic versus "
                              "geometric sequences in my sequence definition problems."))
    found = changes("How many sequence definition problems have I completed with a perfect score on identifying "
                    "arithmetic versus geometric sequences?", lines, DATES)
    assert [v.quantity.text for v in found[0].said] == ["4/5", "5/5"]
    assert newest_value("You scored 4/5.", found) == ("You scored 5/5.", "4/5")


def test_the_checks_show_the_change_once_and_correct_the_answer() -> None:
    checks = Checks(QUESTION)
    assert "(later, holds now: 95%)" in (checks.notes(ACCURACY, DATES) or "")
    assert checks.notes(ACCURACY, DATES) is None  # reported once
    fixed = checks.answer("85%", ACCURACY, DATES)
    assert fixed is not None and fixed[0] == "95%"
    past = Checks("What was my accuracy before I reviewed more proofs?", past=True)
    assert past.answer("85%", ACCURACY, DATES) is None  # asks about the past: the older value stands
    then = Checks(QUESTION, as_of=AsOf(date(2024, 3, 1), "1 March 2024"))
    assert then.answer("95%", ACCURACY, DATES) == ("85%", "recency: '95%' was said earlier; the value that held on "
                                                          "2024-03-01 replaces it")


@pytest.mark.parametrize(("answer", "correct"), [
    ("180ms", True),
    ("180 ms", True),
    ("The average is 180 milliseconds.", True),
    ("0.18 s", True),
    ("180 seconds", False),
    ("250ms", False),
])
def test_a_short_gold_answer_is_met_however_it_is_written(answer: str, correct: bool) -> None:
    rubric = ["LLM response should mention: 180ms is the current average API response time under 1,000 "
              "concurrent users"]
    got = score("knowledge_update", "What is the average API response time under 1,000 concurrent users?",
                rubric, answer, "180ms", "the earlier 250ms")
    assert got.correct is correct


def test_a_fraction_gold_needs_both_numbers() -> None:
    rubric = ["LLM response should mention: 6 out of 7 problems"]
    q = "How many maxima and minima problems have I completed correctly so far?"
    assert score("knowledge_update", q, rubric, "7", "6 out of 7 problems").correct is False
    assert score("knowledge_update", q, rubric, "6/7 problems", "6 out of 7 problems").correct is True
    assert score("knowledge_update", q, rubric, "7 problems, 6 of them correct", "6 out of 7 problems").correct


def test_a_target_beside_the_value_and_one_line_with_two_values_are_no_update() -> None:
    lines = _shown(("CLIP_0", "User <character_1>: My total frame latency with counting logic is 210ms."),
                   ("CLIP_1", "User <character_1>: My total frame latency with counting logic is currently at 180ms, "
                              "well under the 250ms target."))
    question = "What is the total frame latency with the counting logic enabled?"
    assert [v.quantity.text for v in changes(question, lines, DATES)[0].said] == ["210ms", "180ms"]
    both = _shown(("CLIP_0", "User <character_1>: My total frame latency with counting logic is 210ms."),
                  ("CLIP_1", "User <character_1>: My total frame latency with counting logic is 180ms, and total "
                             "frame latency with counting logic on the old GPU is 190ms."))
    assert changes(question, both, DATES) == []  # the last line gives two: order cannot say which holds


def test_an_answer_that_says_nothing_gets_the_value_stated_last() -> None:
    checks = Checks(QUESTION)
    assert checks.answer(", ", ACCURACY, DATES) == ("95%", "the reader's ', ' says nothing; the value stated last "
                                                           "replaces it")
    assert Checks("What is my favourite colour?").answer(",", ACCURACY, DATES) is None  # nothing it asks changed


def test_a_value_its_clause_calls_earlier_never_holds() -> None:
    # said last, "60% on my initial quiz" tells how things were: the 92% said before it still holds
    shown = [("CLIP_0", "User <character_1>: I improved my quiz score from 78% to 92% after practising induction."),
             ("CLIP_1", "User <character_1>: I've completed 3 induction problems, and I've scored 60% on my "
                        "initial quiz, and I've reviewed 5 proofs."),
             ("CLIP_2", "User <character_1>: My original estimate was 3 weeks for the quiz prep, it took 5 weeks.")]
    found = {v.quantity.text for v in values(shown, DATES)}
    assert "92%" in found and "60%" not in found
    assert "3 weeks" not in found and "5 weeks" in found  # "my original estimate": an earlier state too
    question = "What score did I achieve on my induction quiz most recently?"
    assert newest_value("92%", changes(question, shown, DATES)) is None  # the answer that holds stands
