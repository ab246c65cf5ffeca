"""A question about the time between two events: its two event phrases, and each event's day from its lines."""

from __future__ import annotations

from datetime import date

import pytest

from m3graph.reasoning.durations import asks_for_duration, duration_answer
from m3graph.reasoning.events import EventDay, EventDays, event_day, event_phrases


@pytest.mark.parametrize(("question", "phrases"), [
    ("How many days do I have between finishing my prototype and my internal demo?",
     ("finishing my prototype", "my internal demo")),
    # "and" inside a phrase does not split it; the "and" that opens a new phrase does
    ("How many days are there between finishing my unit and integration tests and the deadline for the scripts?",
     ("finishing my unit and integration tests", "the deadline for the scripts")),
    ("How many days passed between when I booked the hotel and when I checked in?",
     ("I booked the hotel", "I checked in")),
    ("How many days passed between when I booked the hotel and when I checked in two days later?", None),  # given
    ("How many days after I first saw the 401 error did I see the expired token error?",
     ("I first saw the 401 error", "see the expired token error")),
    ("How many days after Jack read the newspaper did Mia eat the mango?",
     ("Jack read the newspaper", "eat the mango")),
    ("How much time passed from when I committed to daily work until I planned the release?",
     ("I committed to daily work", "I planned the release")),
    ("How long was it between the trip?", None),  # no second event
    ("When did Mia eat the mango?", None),
])
def test_event_phrases(question: str, phrases: tuple[str, str] | None) -> None:
    assert event_phrases(question) == phrases


@pytest.mark.parametrize(("question", "expected"), [
    ("How much time passed between the two calls?", True),
    ("How much time do I have between the demo and the launch?", True),
    ("How much time did I save per problem between those sessions?", False),  # a quantity, not a span
])
def test_how_much_time_asks_for_a_span_only_when_it_passed(question: str, expected: bool) -> None:
    assert asks_for_duration(question) is expected


def test_an_event_is_dated_by_the_day_its_best_line_names_near_its_words() -> None:
    dates = {"CLIP_0": "5 January 2024", "CLIP_1": "25 January 2024"}
    lines = [("CLIP_0", "Sprint 1 ends on January 19, 2024; my first internal demo with the prototype is on "
                        "January 20, 2024.", 0.8)]
    day = event_day("my internal demo", lines, dates)
    assert day == EventDay("my internal demo", date(2024, 1, 20), "CLIP_0", True)
    # a day said without a year takes the session's year
    day = event_day("the hybrid demo", [("CLIP_1", "The hybrid demo is planned for February 5.", 0.8)], dates)
    assert day is not None and day.day == date(2024, 2, 5) and day.named


def test_the_line_holding_the_events_words_and_a_day_wins_over_a_slightly_closer_one() -> None:
    dates = {"CLIP_0": "5 January 2024", "CLIP_2": "6 March 2024"}
    lines = [("CLIP_2", "What if I test the recommender with other weights?", 0.83),
             ("CLIP_0", "I have an internal demo of my hybrid recommender planned for February 5, 2024.", 0.80)]
    day = event_day("my internal demo of the hybrid recommender", lines, dates)
    assert day == EventDay("my internal demo of the hybrid recommender", date(2024, 2, 5), "CLIP_0", True)
    # far apart in cosine, the closer line wins even without a day (dated by its session)
    lines = [("CLIP_2", "What if I test the recommender with other weights?", 0.95), lines[1]]
    day = event_day("my internal demo of the hybrid recommender", lines, dates)
    assert day is not None and day.day == date(2024, 3, 6) and not day.named


def test_a_line_that_names_no_day_is_dated_by_its_session() -> None:
    dates = {"CLIP_3": "2 March 2024"}
    day = event_day("the 401 error", [("CLIP_3", "I keep getting a 401 Unauthorized error.", 0.7)], dates)
    assert day == EventDay("the 401 error", date(2024, 3, 2), "CLIP_3", False)
    assert event_day("the 401 error", [("CLIP_9", "I keep getting a 401 error.", 0.7)], dates) is None  # no date


def test_the_span_between_two_event_days() -> None:
    days = EventDays(EventDay("b", date(2024, 2, 5), "CLIP_1", True), EventDay("a", date(2024, 1, 20), "CLIP_0", True))
    assert days.answer() == "about 2 weeks (16 days), from 20 January 2024 to 5 February 2024"
    assert '"b": 5 February 2024 (the day its line names, CLIP_1)' in days.note()


def test_an_act_of_setting_is_dated_when_it_was_said_not_by_the_day_it_set() -> None:
    dates = {"CLIP_4": "31 January 2024"}
    lines = [("CLIP_4", "My goal is to solve 5 problems on parallel and perpendicular lines by February 5.", 0.8)]
    act = event_day("setting my goal to solve 5 problems on parallel and perpendicular lines", lines, dates)
    assert act == EventDay("setting my goal to solve 5 problems on parallel and perpendicular lines",
                           date(2024, 1, 31), "CLIP_4", False)
    # what was set is dated by the day the line names
    deadline = event_day("the deadline I set to complete the 5 problems", lines, dates)
    assert deadline is not None and deadline.day == date(2024, 2, 5) and deadline.named
    # an act reported with a day on or before the day it was said keeps that day
    booked = event_day("I booked the hotel", [("CLIP_4", "I booked the hotel on January 29.", 0.8)], dates)
    assert booked is not None and booked.day == date(2024, 1, 29) and booked.named


def test_two_events_of_one_day_are_said_to_be_so() -> None:
    day = date(2024, 3, 12)
    same = EventDays(EventDay("a", day, "CLIP_5", False), EventDay("b", day, "CLIP_5", True))
    assert same.answer() == "0 days: both happened in the same session, on 12 March 2024"
    other = EventDays(EventDay("a", day, "CLIP_5", False), EventDay("b", day, "CLIP_6", True))
    assert other.answer() == "0 days: both happened on the same day, 12 March 2024"
    assert duration_answer("12 March 2024 to 12 March 2024") == "0 days: both happened on the same day, 12 March 2024"
