"""Knowledge updates read from what people say (issue 38): a date still to come is a value that can move, a value
with no words of its own borrows those of the value it follows, "up to N" is a capacity, a value said beside a
changed one changes with it, every change the question touches is checked, and a bare value of the holding line
is given with its clause. Constructed lines, no database, no model."""

from __future__ import annotations

from m3graph.reasoning.answer_checks import Checks
from m3graph.reasoning.full_value import full_value
from m3graph.reasoning.value_updates import changes, newest_value, readings, values

DATES = {"CLIP_0": "20 March 2024", "CLIP_1": "3 April 2024", "CLIP_2": "10 April 2024"}
U = "User <character_1>: "


def test_dates_are_values_read_as_days() -> None:
    got = readings("set to April 5, 2024 [= 5 April 2024], or '2024-04-05', by 7 May")
    assert [(q.family, q.key) for q in got] == [("date", "date:2024-04-05"), ("date", "date:2024-04-05"),
                                                ("date", "date:2024-04-05"), ("date", "date:*-05-07")]
    assert [q.text for q in readings("scored 5/6 on March 3, 2024")] == ["5/6", "March 3, 2024"]  # not 3 and 2024


DEADLINE = [
    ("CLIP_0", U + "I'm planning my sprint and I need to set a sprint deadline of April 1, 2024, to complete the "
                   "Instagram automation prototype."),
    ("CLIP_0", U + "I'm trying to adjust the deadline for my Instagram automation prototype to April 5, 2024 "
                   "[= 5 April 2024], as mentioned."),
]
ASKED = "What is the deadline for completing the Instagram automation prototype sprint?"


def test_a_moved_deadline_is_a_change_and_the_old_day_is_replaced() -> None:
    found = changes(ASKED, DEADLINE, DATES)
    assert [v.quantity.text for v in found[0].said] == ["April 1, 2024", "April 5, 2024"]
    assert newest_value("April 1, 2024 [= 1 April 2024]", found) == ("April 5, 2024 [= April 5, 2024]",
                                                                       "April 1, 2024")


def test_a_day_already_past_or_a_start_is_no_value() -> None:
    past = [("CLIP_1", U + "I submitted my Instagram automation prototype on March 25, 2024."),
            ("CLIP_2", U + "I submitted my Instagram automation prototype on April 8, 2024.")]
    assert values(past, DATES) == []  # events that happened: a later day is another event, not an update
    since = [("CLIP_0", U + "I've been working on my Instagram automation prototype since April 2, 2024.")]
    assert values(since, DATES) == []


def test_the_time_between_two_days_keeps_both_days() -> None:
    asked = "How many days are there between my original prototype deadline and the adjusted deadline?"
    assert changes(asked, DEADLINE, DATES) == []


def test_a_value_after_another_borrows_its_words_and_up_to_is_a_capacity() -> None:
    said = values([("CLIP_0", U + "I improved my proof writing quiz score from 70% to 85%, but I'm still stuck."),
                   ("CLIP_1", U + "I've heard the new version supports up to 75 items with a 50% improvement.")],
                  DATES)
    assert {v.quantity.text: v.words for v in said}["85%"] == "improved proof writing quiz score"
    assert "70%" not in {v.quantity.text for v in said}  # the value it changed from
    assert "75" in {v.quantity.text for v in said}


STUDY = [
    ("CLIP_0", U + "I've been studying for 5 hours and I improved my proof writing quiz score from 70% to 85%, "
                   "but I'm still struggling."),
    ("CLIP_1", U + "I'm trying to understand how my study time affects my proof writing quiz scores, and I noticed "
                   "that when I extended my study time to 6 hours this week [= the week of 1 April 2024], my score "
                   "increased to 90%"),
]
TWO = "How many hours did I study this week, and what score did I achieve on the proof writing quiz?"


def test_a_value_said_beside_a_changed_one_changes_with_it() -> None:
    found = changes(TWO, STUDY, DATES)
    assert [v.quantity.text for v in found[0].said] == ["5 hours", "6 hours"]
    assert [(a.quantity.text, b.quantity.text) for a, b in found[0].companions] == [("85%", "90%")]
    assert newest_value("6 hours, 85%", found) == ("6 hours, 90%", "85%")
    assert newest_value("6 hours, 90%", found) is None
    assert newest_value("5 hours and 85%", found) == ("6 hours and 90%", "5 hours, 85%")


SCHEDULER = [
    ("CLIP_0", U + "I've tested it with 50 concurrent scheduled items, but I'm not sure it is efficient enough."),
    ("CLIP_1", U + "I'm trying to improve the throughput of my scheduler by handling more concurrent scheduled "
                   "items, and I've heard that the new version supports up to 75 items with a 50% improvement in "
                   "throughput, so I want to upgrade my scheduler."),
]
CAPACITY = "How many concurrent scheduled items can my scheduler handle to achieve improved throughput?"


def test_a_bare_value_of_the_holding_line_gets_its_clause() -> None:
    found = changes(CAPACITY, SCHEDULER, DATES)
    assert [v.quantity.text for v in found[0].said] == ["50", "75"]
    clause = "I've heard that the new version supports up to 75 items with a 50% improvement in throughput"
    assert full_value("75", found) == f'75 ("{clause}")'
    assert full_value("75 items", found) == f'75 items ("{clause}")'
    assert full_value("It handles 75 items now.", found) is None  # words of its own: the answer stands
    assert full_value("50%", found) == f'50% ("{clause}")'  # a value of the same clause
    assert full_value("12", found) is None  # not a value of the holding line


def test_no_clause_when_it_adds_nothing_or_holds_a_bound_or_code() -> None:
    alone = [("CLIP_0", U + "My login API response time is 180ms under 20 concurrent requests."),
             ("CLIP_1", U + "My login API response time has decreased to 120ms under 20 concurrent requests.")]
    found = changes("What is my login API response time?", alone, DATES)
    assert found and full_value("120ms", found) is None  # "under 20 requests" is a condition, not a value
    moved = [("CLIP_0", U + "I studied for 4 hours this week for my graphing quiz."),
             ("CLIP_1", U + "My study time went from 4 hours to 5 hours this week and my graphing quiz score to 93%")]
    found = changes("How many hours did I study this week for my graphing quiz?", moved, DATES)
    assert found and full_value("5 hours", found) is None  # the clause names the old 4 hours
    code = [("CLIP_0", U + "My Redis maxmemory is set to 512MB."),
            ("CLIP_1", U + "My Redis client = redis.Redis(db=0) # Set my Redis maxmemory setting to 1GB # ???")]
    found = changes("What is my Redis maxmemory setting?", code, DATES)
    assert found and full_value("1GB", found) is None


def test_the_checks_replace_then_complete_and_leave_the_past_alone() -> None:
    checks = Checks(CAPACITY)
    got = checks.answer("50", SCHEDULER, DATES)
    assert got is not None and got[0].startswith('75 ("I\'ve heard') and "clause added" in got[1]
    assert Checks("How many items did my scheduler handle before the upgrade?", past=True).answer(
        "50", SCHEDULER, DATES) is None
    fixed = Checks(TWO).answer("6 hours, 85%", STUDY, DATES)
    assert fixed is not None and fixed[0] == "6 hours, 90%"
    done = Checks("How many maxima and minima problems have I completed correctly so far?").answer("7", [
        ("CLIP_0", U + "I spent 5 hours over 4 days reading 3 chapters on maxima/minima in my calculus textbook."),
        ("CLIP_1", U + "I need help, I completed 7 maxima/minima problems with 6 correct, but now I'm stuck.")],
        DATES)
    assert done is not None and done[0] == '7 ("I completed 7 maxima/minima problems with 6 correct")'


def test_a_value_under_another_condition_is_not_the_one_asked_for() -> None:
    lines = [("CLIP_0", U + "My login API response time is 180ms under 20 concurrent requests."),
             ("CLIP_1", U + "My login API response time has decreased to 120ms under 20 concurrent requests."),
             ("CLIP_2", U + "I've noticed that under 300 concurrent users, my API response time is around 210ms.")]
    found = changes("What is the login API response time under 20 concurrent requests?", lines, DATES)
    assert [v.quantity.text for v in found[0].said] == ["180ms", "120ms"]
    anywhere = changes("What is my login API response time?", lines, DATES)  # no condition asked: all three
    assert [v.quantity.text for v in anywhere[0].said] == ["180ms", "120ms", "210ms"]
