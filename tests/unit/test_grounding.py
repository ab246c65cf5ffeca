"""The when-answer check against the shown lines (m3graph/reasoning/grounding.py): no model, no graph."""

from __future__ import annotations

import pytest

from m3graph.reasoning.grounding import asks_when, ground_time

LINES = [
    "Jon <character_4>: Yesterday [= 20 June 2023] I chose to go to networking events.",
    "Maria <character_6>: Last week [= the week before 9 August 2023] was wild - they gave me a medal!",
    "John <character_5>: Last Sunday [= 30 July 2023] we had our first call-out.",
]
SHOWN = [(f"CLIP_{i}", line) for i, line in enumerate(LINES)]


def _shown(lines: list[str]) -> list[tuple[str, str]]:
    return [("CLIP_0", line) for line in lines]


@pytest.mark.parametrize(("answer", "expected"), [
    ("Yesterday", "20 June 2023"),
    ("yesterday.", "20 June 2023"),
    ("Last week (the week of 31 July 2023)", "the week before 9 August 2023"),
    ("Last Sunday [30 July 2023]", "30 July 2023"),
    ("Last Sunday [= 30 July 2023]", "30 July 2023"),
    # A whole copied line holding one time: the time is what "when" asks.
    ("Yesterday [= 20 June 2023] I chose to go to networking events.", "20 June 2023"),
])
def test_a_relative_answer_becomes_its_lines_resolution(answer: str, expected: str) -> None:
    grounded = ground_time("When did it happen?", answer, SHOWN)
    assert grounded is not None and grounded.answer == expected


def test_nothing_changes_without_a_matching_note_or_a_when_question() -> None:
    assert ground_time("When did Jon go?", "20 June 2023", SHOWN) is None  # already a date
    assert ground_time("When did Jon go?", "last month", SHOWN) is None  # no line resolves "last month"
    assert ground_time("What did Jon do?", "Yesterday", SHOWN) is None  # not a when-question
    assert ground_time("When did Jon go?", "Yesterday", _shown(["Jon <character_4>: I went yesterday."])) is None


def test_two_times_in_one_answer_are_each_replaced_in_place() -> None:
    grounded = ground_time("When did they meet?", "between last Sunday and yesterday", SHOWN)
    assert grounded is not None
    assert grounded.answer == "between 30 July 2023 and 20 June 2023"
    assert grounded.replaced == (("last Sunday", "30 July 2023"), ("yesterday", "20 June 2023"))


def test_an_expression_resolved_two_ways_follows_the_line_the_question_names() -> None:
    lines = _shown(["Ann <speaker_1>: yesterday [= 7 May 2023] I went to the support group.",
                    "Ann <speaker_1>: yesterday [= 2 June 2023] I painted a sunset."])
    assert ground_time("When did Ann paint a sunset?", "Yesterday", lines).answer == "2 June 2023"  # type: ignore[union-attr]
    assert ground_time("When did Ann go to the support group?", "yesterday", lines).answer == "7 May 2023"  # type: ignore[union-attr]
    assert ground_time("When was it?", "yesterday", lines) is None  # no line is the one: the words stand


def test_a_session_date_given_as_the_answer_becomes_the_date_its_line_tells() -> None:
    """Lines are shown after their session's date; "20 January 2023" copied from there, where the line the
    question points to says "yesterday [= 19 January 2023]", is the day the line was said, not the event's."""
    shown = [("CLIP_0", "Jon <character_4>: Lost my job as a banker yesterday [= 19 January 2023], so I'm starting."),
             ("CLIP_0", "Jon <character_4>: Wanna see my moves next Fri [= 27 January 2023]?"),
             ("CLIP_3", "Gina <character_3>: I opened my store today.")]
    said_on = {"CLIP_0": "20 January 2023", "CLIP_3": "16 March 2023"}
    grounded = ground_time("When did Jon lose his job as a banker?", "20 January 2023", shown, said_on)
    assert grounded is not None and grounded.answer == "19 January 2023" and grounded.said_day
    assert grounded.note("20 January 2023") == ("the reader's '20 January 2023' is the day its line was said; the "
                                                "line tells of '19 January 2023', as shown")
    # The session's date is the answer when the line has no time of its own, or no line is clearly the one.
    assert ground_time("When did Gina open her store?", "16 March 2023", shown, said_on) is None
    assert ground_time("When did it happen?", "20 January 2023", shown, said_on) is None
    # A line telling of two times does not say which one the question asks.
    two = [("CLIP_0", "Jon <character_4>: Lost my job as a banker yesterday [= 19 January 2023], back next week "
                      "[= the week after 20 January 2023].")]
    assert ground_time("When did Jon lose his job as a banker?", "20 January 2023", two, said_on) is None
    # A date a line holds was read there; without session dates nothing is checked.
    assert ground_time("When did Jon lose his job?", "19 January 2023", shown, said_on) is None
    assert ground_time("When did Jon lose his job as a banker?", "20 January 2023", shown) is None


def test_a_time_the_pointed_line_does_not_tell_becomes_the_time_it_does() -> None:
    """The line sharing the most of the question's words, alone, decides: its one resolved time, or, when it
    holds no time expression, the day its session was said."""
    said_on = {"CLIP_17": "21 July 2023", "CLIP_18": "23 July 2023", "CLIP_12": "25 August 2023"}
    shia = [("CLIP_18", "Jon <character_4>: Sounds familiar, who do those words belong to?"),
            ("CLIP_18", "Gina <character_3>: It's Shia Labeouf!"),
            ("CLIP_18", "Gina <character_3>: Last Friday [= 21 July 2023] at dance class I felt it.")]
    grounded = ground_time("When did Gina mention Shia Labeouf?", "21 July 2023", shia, said_on)
    assert grounded is not None and grounded.answer == "23 July 2023" and grounded.pointed
    assert grounded.note("21 July 2023") == (
        "the reader's '21 July 2023' is not the time of the line the question points to "
        "(\"Gina <character_3>: It's Shia Labeouf!\"); that line tells of '23 July 2023'")
    # Its one resolved time, words stemmed ("applied" meets "apply", "agency" "agencies").
    adopt = [("CLIP_12", "Caroline <character_1>: Guess what I did this week [= the week of 23 August 2023]? "
                         "I applied to adoption agencies!"),
             ("CLIP_18", "Caroline <character_1>: I passed the adoption agency interviews last Friday "
                         "[= 20 October 2023]!")]
    grounded = ground_time("When did Caroline apply to adoption agencies?", "20 October 2023", adopt, said_on)
    assert grounded is not None and grounded.answer == "the week of 23 August 2023"


def test_the_pointed_line_check_leaves_agreeing_or_undecided_answers() -> None:
    said_on = {"CLIP_5": "16 March 2023", "CLIP_13": "16 June 2023", "CLIP_3": "27 June 2023"}
    # Two lines share as many of the question's words: no single line is the one.
    tie = [("CLIP_5", "Gina <character_3>: Yay! My online clothes store is open!"),
           ("CLIP_13", "Gina <character_3>: I opened an online clothing store and it's been great!")]
    assert ground_time("When did Gina open her online clothing store?", "25 April 2023", tie, said_on) is None
    # The reader said less than the line ("June 2023" holds the week before 27 June): left alone.
    camp = [("CLIP_3", "Melanie <character_2>: I took my fam camping in the mountains last week "
                       "[= the week before 27 June 2023].")]
    assert ground_time("When did Melanie go camping?", "June 2023", camp, said_on) is None
    # A line telling a time it does not resolve ("in May") gives no single day; one word in common is too few.
    vague = [("CLIP_5", "Gina <character_3>: I opened my store in May, can you believe it?")]
    assert ground_time("When did Gina open her store?", "16 March 2023", vague, said_on) is None
    assert ground_time("When did Gina sing?", "1 May 2023", [("CLIP_5", "Gina <character_3>: Hi!")], said_on) is None
    # An answer that only repeats the question's own month says nothing: the line telling of a shorter time
    # inside it answers (the plan "next month [= June 2023]" does not).
    june = [("CLIP_1", "Melanie <character_2>: We're thinking about going camping next month [= June 2023]."),
            *camp, ("CLIP_3", "Melanie <character_2>: We roasted marshmallows around the campfire.")]
    grounded = ground_time("When did Melanie go camping in June?", "June 2023", june, said_on)
    assert grounded is not None and grounded.answer == "the week before 27 June 2023"
    assert ground_time("When did Melanie go camping in July?", "June 2023", june, said_on) is None
    # An answer with no time, or two, is not checked.
    assert ground_time("When did Gina mention Shia Labeouf?", "Not in memory.", tie, said_on) is None


@pytest.mark.parametrize(("question", "when"), [
    ("When did Jon lose his job?", True), ("In which month did Gina open her store?", True),
    ("What year did Maria move?", True), ("On what date did they meet?", True),
    ("What did Jon do yesterday?", False), ("How long did it take?", False),
])
def test_asks_when(question: str, when: bool) -> None:
    assert asks_when(question) is when


def test_the_replay_reads_the_readers_own_answer_and_counts_both_sides() -> None:
    """bench/answer_grounding.py: a recorded row is checked from its reader reply, not its final answer."""
    from bench.answer_grounding import reader_answer, replay

    row = {"id": "c/q1", "source": "c", "question": "When did Jon go to networking events?", "gt": "20 June, 2023",
           "answer": "20 June 2023", "outcome": "answered", "types": ["temporal"],
           "rounds": [{"action": "search_node", "raw": [], "knowledge": {"CLIP_0": [LINES[0]]}},
                      {"action": "answer", "raw": ['{"answer": "Yesterday", "next_query": null}'], "knowledge": {}}]}
    assert reader_answer(row) == "Yesterday"
    r = replay([row, {**row, "outcome": "abstained"}], {"c": {}})
    assert (r.checked, r.before, r.after) == (1, 0, 1)
    assert r.changed[0].startswith("c/q1: 'Yesterday' -> '20 June 2023'")
    assert (r.when, r.dated_before, r.dated_after) == (1, 0, 1)


@pytest.mark.parametrize(("answer", "gold", "inside"), [
    ("18 July 2023", "The Tuesday before 20 July 2023", True),
    ("20 July 2023", "The Tuesday before 20 July 2023", False),
    ("17 August 2023", "The week before 25 August 2023", True),
    ("August 2023", "The week before 25 August 2023", False),  # says less than the gold
    ("Not in memory", "7 May 2023", False),
])
def test_a_when_answer_is_scored_by_date_interval(answer: str, gold: str, inside: bool) -> None:
    from bench.answer_grounding import within_gold

    assert within_gold(answer, gold) is inside
