"""The duration tool: which questions it serves and the arithmetic it does."""

from __future__ import annotations

from datetime import date

import pytest

from m3graph.reasoning.durations import asks_for_duration, duration_answer, span_words


@pytest.mark.parametrize(("question", "expected"), [
    ("How many days after the race did Melanie paint the sunrise?", True),
    ("How long was it between the adoption and the trip?", True),
    ("How many weeks passed before Jon opened the studio?", True),
    ("How long has Caroline had her current group of friends for?", False),  # a duration said in words
    ("When did Melanie paint a sunrise?", False),
    ("How many children does Melanie have?", False),
])
def test_which_questions_ask_for_the_time_between_two_events(question: str, expected: bool) -> None:
    assert asks_for_duration(question) is expected


@pytest.mark.parametrize(("first", "last", "words"), [
    (date(2023, 5, 7), date(2023, 5, 8), "1 day"),
    (date(2023, 5, 7), date(2023, 5, 12), "5 days"),
    (date(2023, 5, 7), date(2023, 5, 17), "about 1 week (10 days)"),
    (date(2023, 5, 7), date(2023, 5, 28), "3 weeks (21 days)"),
    (date(2023, 5, 7), date(2023, 6, 1), "about 4 weeks (25 days)"),
    (date(2023, 1, 7), date(2023, 5, 7), "about 4 months (120 days)"),
    (date(2021, 5, 7), date(2023, 5, 7), "2 years (730 days)"),
])
def test_span_words(first: date, last: date, words: str) -> None:
    assert span_words(first, last) == words
    assert span_words(last, first) == words  # order does not matter


def test_the_answer_needs_two_exact_days() -> None:
    assert duration_answer("28 May 2023 to 7 May 2023") == "3 weeks (21 days), from 7 May 2023 to 28 May 2023"
    assert duration_answer("May 2023 to June 2023") is None  # months: no exact day to count from
    assert duration_answer("7 May 2023") is None
    assert duration_answer("about three weeks") is None
