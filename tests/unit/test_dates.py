"""The time-expression resolver: each expression against hand-computed calendar dates (no server needed)."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from m3graph.dates import MAX_TIMES, TimeNotes, annotate, find_times, relative_words, render_interval

MON = date(2023, 5, 8)  # a Monday
FRI = date(2023, 6, 9)  # a Friday
NEW_YEAR_MON = date(2023, 1, 2)  # Monday; 1 January 2023 was a Sunday
YEAR_END_SUN = date(2023, 12, 31)  # Sunday
LEAP_FRI = date(2024, 3, 1)  # the day after 29 February 2024
D = date

# (text, reference, first, last, granularity, approximate); the text holds exactly one expression.
CASES = [
    # days around the reference
    ("I went yesterday", MON, D(2023, 5, 7), D(2023, 5, 7), "day", False),
    ("it is today", MON, MON, MON, "day", False),
    ("see you tonight", MON, MON, MON, "day", False),
    ("this morning I ran", MON, MON, MON, "day", False),
    ("last night was loud", MON, D(2023, 5, 7), D(2023, 5, 7), "day", False),
    ("tomorrow we fly", MON, D(2023, 5, 9), D(2023, 5, 9), "day", False),
    ("the day before yesterday", MON, D(2023, 5, 6), D(2023, 5, 6), "day", False),
    ("the day after tomorrow", MON, D(2023, 5, 10), D(2023, 5, 10), "day", False),
    ("3 days ago", MON, D(2023, 5, 5), D(2023, 5, 5), "day", False),
    ("two days ago", MON, D(2023, 5, 6), D(2023, 5, 6), "day", False),
    ("a few days ago", MON, D(2023, 5, 4), D(2023, 5, 6), "day", True),
    ("the other day", MON, D(2023, 5, 1), D(2023, 5, 7), "day", True),
    ("in 3 days", MON, D(2023, 5, 11), D(2023, 5, 11), "day", False),
    # weekdays (8 May 2023 is a Monday)
    ("last Saturday", MON, D(2023, 5, 6), D(2023, 5, 6), "day", False),
    ("last Monday", MON, D(2023, 5, 1), D(2023, 5, 1), "day", False),
    ("last fri", MON, D(2023, 5, 5), D(2023, 5, 5), "day", False),
    ("this past Sunday", MON, D(2023, 5, 7), D(2023, 5, 7), "day", False),
    ("this Friday", MON, D(2023, 5, 12), D(2023, 5, 12), "day", False),
    ("this coming Friday", MON, D(2023, 5, 12), D(2023, 5, 12), "day", False),
    ("next Friday", MON, D(2023, 5, 19), D(2023, 5, 19), "day", False),
    ("next Monday", MON, D(2023, 5, 15), D(2023, 5, 15), "day", False),
    ("last Friday", D(2023, 7, 15), D(2023, 7, 14), D(2023, 7, 14), "day", False),
    ("I went to the museum on Sunday.", MON, D(2023, 5, 7), D(2023, 5, 7), "day", False),
    ("We will go camping on Sunday.", MON, D(2023, 5, 14), D(2023, 5, 14), "day", False),
    ("I'm going to a recital Saturday", MON, D(2023, 5, 13), D(2023, 5, 13), "day", False),
    ("Friday was hard", MON, D(2023, 5, 5), D(2023, 5, 5), "day", False),
    # weeks and weekends (Monday weeks)
    ("last week", MON, D(2023, 5, 1), D(2023, 5, 7), "week", False),
    ("last week", FRI, D(2023, 5, 29), D(2023, 6, 4), "week", False),
    ("this week", FRI, D(2023, 6, 5), D(2023, 6, 11), "week", False),
    ("next week", MON, D(2023, 5, 15), D(2023, 5, 21), "week", False),
    ("two weeks ago", MON, D(2023, 4, 24), D(2023, 4, 30), "week", False),
    ("a couple of weeks ago", MON, D(2023, 4, 24), D(2023, 4, 30), "week", True),
    ("in two weeks", MON, D(2023, 5, 22), D(2023, 5, 28), "week", False),
    ("this weekend", MON, D(2023, 5, 13), D(2023, 5, 14), "weekend", False),
    ("last weekend", MON, D(2023, 5, 6), D(2023, 5, 7), "weekend", False),
    ("last weekend", D(2023, 7, 17), D(2023, 7, 15), D(2023, 7, 16), "weekend", False),
    ("next weekend", MON, D(2023, 5, 20), D(2023, 5, 21), "weekend", False),
    ("over the weekend", MON, D(2023, 5, 6), D(2023, 5, 7), "weekend", False),
    ("over the weekend", D(2023, 5, 7), D(2023, 5, 6), D(2023, 5, 7), "weekend", False),
    # months and years
    ("last month", MON, D(2023, 4, 1), D(2023, 4, 30), "month", False),
    ("a month ago", MON, D(2023, 4, 1), D(2023, 4, 30), "month", False),
    ("this month", MON, D(2023, 5, 1), D(2023, 5, 31), "month", False),
    ("next month", MON, D(2023, 6, 1), D(2023, 6, 30), "month", False),
    ("in 3 months", MON, D(2023, 8, 1), D(2023, 8, 31), "month", False),
    ("last year", MON, D(2022, 1, 1), D(2022, 12, 31), "year", False),
    ("next year", MON, D(2024, 1, 1), D(2024, 12, 31), "year", False),
    ("ten years ago", MON, D(2013, 1, 1), D(2013, 12, 31), "year", False),
    ("a few years ago", MON, D(2019, 1, 1), D(2021, 12, 31), "year", True),
    ("several years ago", MON, D(2016, 1, 1), D(2020, 12, 31), "year", True),
    ("last May", MON, D(2022, 5, 1), D(2022, 5, 31), "month", False),
    ("last March", MON, D(2023, 3, 1), D(2023, 3, 31), "month", False),
    ("next March", MON, D(2024, 3, 1), D(2024, 3, 31), "month", False),
    # seasons (meteorological, northern)
    ("last summer", MON, D(2022, 6, 1), D(2022, 8, 31), "season", False),
    ("last summer", D(2023, 10, 2), D(2023, 6, 1), D(2023, 8, 31), "season", False),
    ("this summer", MON, D(2023, 6, 1), D(2023, 8, 31), "season", False),
    ("last winter", MON, D(2022, 12, 1), D(2023, 2, 28), "season", False),
    ("this winter", YEAR_END_SUN, D(2023, 12, 1), D(2024, 2, 29), "season", False),
    # month and year boundaries, leap years
    ("yesterday", NEW_YEAR_MON, D(2023, 1, 1), D(2023, 1, 1), "day", False),
    ("last week", NEW_YEAR_MON, D(2022, 12, 26), D(2023, 1, 1), "week", False),
    ("last month", NEW_YEAR_MON, D(2022, 12, 1), D(2022, 12, 31), "month", False),
    ("last Friday", NEW_YEAR_MON, D(2022, 12, 30), D(2022, 12, 30), "day", False),
    ("last weekend", NEW_YEAR_MON, D(2022, 12, 31), D(2023, 1, 1), "weekend", False),
    ("tomorrow", YEAR_END_SUN, D(2024, 1, 1), D(2024, 1, 1), "day", False),
    ("next week", YEAR_END_SUN, D(2024, 1, 1), D(2024, 1, 7), "week", False),
    ("next month", YEAR_END_SUN, D(2024, 1, 1), D(2024, 1, 31), "month", False),
    ("next Monday", YEAR_END_SUN, D(2024, 1, 1), D(2024, 1, 1), "day", False),
    ("this weekend", YEAR_END_SUN, D(2023, 12, 30), D(2023, 12, 31), "weekend", False),
    ("yesterday", LEAP_FRI, D(2024, 2, 29), D(2024, 2, 29), "day", False),
    ("yesterday", D(2023, 3, 1), D(2023, 2, 28), D(2023, 2, 28), "day", False),
    ("last month", LEAP_FRI, D(2024, 2, 1), D(2024, 2, 29), "month", False),
    ("on the 5th.", MON, D(2023, 5, 5), D(2023, 5, 5), "day", False),
    # absolute dates (no arithmetic; the reference does not matter)
    ("on 7 May 2023", None, D(2023, 5, 7), D(2023, 5, 7), "day", False),
    ("the 7th of May, 2023", None, D(2023, 5, 7), D(2023, 5, 7), "day", False),
    ("May 7th, 2023", None, D(2023, 5, 7), D(2023, 5, 7), "day", False),
    ("19 January, 2023", None, D(2023, 1, 19), D(2023, 1, 19), "day", False),
    ("2023-05-07", None, D(2023, 5, 7), D(2023, 5, 7), "day", False),
    ("29 February 2024", None, D(2024, 2, 29), D(2024, 2, 29), "day", False),
    ("May 2023", None, D(2023, 5, 1), D(2023, 5, 31), "month", False),
    ("February, 2023", None, D(2023, 2, 1), D(2023, 2, 28), "month", False),
    ("April.2023", None, D(2023, 4, 1), D(2023, 4, 30), "month", False),
    ("Sept. 2022", None, D(2022, 9, 1), D(2022, 9, 30), "month", False),
    ("2022", None, D(2022, 1, 1), D(2022, 12, 31), "year", False),
    ("back in 2013", None, D(2013, 1, 1), D(2013, 12, 31), "year", False),
    ("The summer of 2022", None, D(2022, 6, 1), D(2022, 8, 31), "season", False),
    ("first weekend of August 2023", None, D(2023, 8, 5), D(2023, 8, 6), "weekend", False),
    ("the last Friday of June 2023", None, D(2023, 6, 30), D(2023, 6, 30), "day", False),
    # anchored (the forms of the benchmark's gold answers)
    ("The week before 9 June 2023", None, D(2023, 5, 29), D(2023, 6, 4), "week", False),
    ("The sunday before 25 May 2023", None, D(2023, 5, 21), D(2023, 5, 21), "day", False),
    ("The Friday before 15 July 2023", None, D(2023, 7, 14), D(2023, 7, 14), "day", False),
    ("The Tuesday before 20 July 2023", None, D(2023, 7, 18), D(2023, 7, 18), "day", False),
    ("The weekend before 17 July 2023", None, D(2023, 7, 15), D(2023, 7, 16), "weekend", False),
    ("two weekends before 17 July 2023", None, D(2023, 7, 8), D(2023, 7, 9), "weekend", False),
    ("Two weeks before 11 August 2023", None, D(2023, 7, 24), D(2023, 7, 30), "week", False),
    ("The week of 23 August 2023", None, D(2023, 8, 21), D(2023, 8, 27), "week", False),
    ("the day after 28 February 2024", None, D(2024, 2, 29), D(2024, 2, 29), "day", False),
]


@pytest.mark.parametrize(("text", "ref", "first", "last", "gran", "approx"), CASES,
                         ids=[f"{c[0]}@{c[1]}" for c in CASES])
def test_resolves(text: str, ref: date | None, first: date, last: date, gran: str, approx: bool) -> None:
    spans = find_times(text, ref)
    assert len(spans) == 1, spans
    s = spans[0]
    assert (s.first, s.last, s.granularity, s.approximate) == (first, last, gran, approx)
    assert text[s.start:s.end] == s.text


# Texts with no time expression in them (the words are other things), or none that can be resolved.
NOT_TIMES = [
    ("May I ask you something?", MON),
    ("March on, my friends", MON),
    ("She wore her Sunday best", MON),
    ("I swim every Sunday", MON),
    ("We go to church on Sundays", MON),
    ("The office is on the 5th floor", MON),
    ("We fed 2000 people", MON),
    ("I scored 2023 points", MON),
    ("this sat on the shelf for years", MON),
    ("I have 3 days off", MON),
    ("We haven't talked in a few days", MON),
    ("It was the first time in 3 years", MON),
    ("It was the last time I saw her", MON),
    ("yesterday", None),  # relative: nothing to resolve against
    ("05/07/2023", None),  # day-first or month-first: not read
]


@pytest.mark.parametrize(("text", "ref"), NOT_TIMES, ids=[t for t, _ in NOT_TIMES])
def test_no_false_positives(text: str, ref: date | None) -> None:
    assert find_times(text, ref) == []


def test_an_impossible_day_keeps_only_its_month() -> None:
    (s,) = find_times("30 February 2023", None)
    assert (s.text, s.granularity, s.first, s.last) == ("February 2023", "month", D(2023, 2, 1), D(2023, 2, 28))


def test_spans_in_a_sentence() -> None:
    text = "I went hiking yesterday and last Saturday, and I'm visiting Rome next month."
    spans = find_times(text, datetime(2023, 5, 8, 13, 56))  # a session's start, with its time of day
    assert [(s.text, s.first) for s in spans] == [("yesterday", D(2023, 5, 7)), ("last Saturday", D(2023, 5, 6)),
                                                 ("next month", D(2023, 6, 1))]
    assert all(text[s.start:s.end] == s.text for s in spans)


def test_yearless_day_takes_the_reference_year() -> None:
    (s,) = find_times("Her birthday is on 13 August", MON)
    assert (s.first, s.yearless) == (D(2023, 8, 13), True)
    (s,) = find_times("13 August", None)
    assert (s.first.month, s.first.day, s.yearless) == (8, 13, True)
    (s,) = find_times("We met in March", MON)
    assert (s.text, s.first, s.last, s.yearless) == ("March", D(2023, 3, 1), D(2023, 3, 31), True)


def test_annotate_appends_the_resolved_date() -> None:
    assert annotate("I went yesterday.", MON) == "I went yesterday [= 7 May 2023]."
    assert annotate("last week was fun", MON) == "last week [= the week before 8 May 2023] was fun"
    assert annotate("we met last weekend", MON) == "we met last weekend [= the weekend before 8 May 2023]"
    assert annotate("a few days ago", MON) == "a few days ago [= about 4-6 May 2023]"
    assert annotate("next month", MON) == "next month [= June 2023]"
    assert annotate("last summer", MON) == "last summer [= summer 2022]"
    # An absolute date in the resolved form already is left as it is; another form gets the canonical one.
    assert annotate("on 7 May 2023 and in 2022", None) == "on 7 May 2023 and in 2022"
    assert annotate("on May 7, 2023", None) == "on May 7, 2023 [= 7 May 2023]"
    assert annotate("no dates here", MON) == "no dates here"


@pytest.mark.parametrize("said_on", [D(2023, 6, 9), D(2023, 6, 10), D(2023, 6, 11), D(2023, 1, 2)])
@pytest.mark.parametrize("words", ["last week", "this week", "next week", "last weekend", "this weekend",
                                   "next weekend", "over the weekend", "two weeks ago", "3 weekends ago",
                                   "in two weeks"])
def test_relative_weeks_keep_the_day_they_were_said_on_and_read_back(said_on: D, words: str) -> None:
    """"last week" said on 9 June 2023 renders as "the week before 9 June 2023", not by its Monday; whatever the
    words, reading the rendering back (no reference needed) gives the same interval."""
    (span,) = find_times(words, said_on)
    rendered = span.render()
    assert _d_text(said_on) in rendered and not rendered.startswith("about")
    (back,) = find_times(rendered, None)
    assert (back.first, back.last, back.granularity) == (span.first, span.last, span.granularity)


def _d_text(d: D) -> str:
    return f"{d.day} {d:%B} {d.year}"


def test_relative_words_only_for_weeks_and_exact_offsets() -> None:
    assert find_times("last week", D(2023, 6, 9))[0].render() == "the week before 9 June 2023"
    assert find_times("last Friday", D(2023, 6, 9))[0].render() == "2 June 2023"  # a day keeps its date
    assert find_times("last month", D(2023, 6, 9))[0].render() == "May 2023"
    assert find_times("a few weeks ago", D(2023, 6, 9))[0].render().startswith("about ")
    assert relative_words(D(2023, 5, 29), D(2023, 6, 4), "day", D(2023, 6, 9)) is None
    assert relative_words(D(2023, 1, 2), D(2023, 1, 8), "week", D(2023, 6, 9)) is None  # no offset in words
    # An absolute form keeps its own rendering.
    assert find_times("the week of 5 June 2023", None)[0].render() == "the week of 5 June 2023"


def test_render_interval_forms() -> None:
    assert render_interval(D(2023, 5, 7), D(2023, 5, 7), "day") == "7 May 2023"
    assert render_interval(D(2023, 4, 28), D(2023, 5, 2), "day", True) == "about 28 April 2023 - 2 May 2023"
    assert render_interval(D(2019, 1, 1), D(2021, 12, 31), "year", True) == "about 2019-2021"
    assert render_interval(D(2022, 12, 1), D(2023, 2, 28), "season") == "winter 2022-23"


# ------------------------------------------------------------------------------------------------ stored form

SAID_ON_MON = datetime(2023, 5, 8, 13, 56)


def test_time_notes_are_parallel_lists_in_text_order() -> None:
    notes = TimeNotes.of("Ann <speaker_3>: yesterday, on 2 May 2023 and last week", SAID_ON_MON)
    assert notes.said == ("yesterday", "2 May 2023", "last week")
    assert notes.means == ("7 May 2023", "2 May 2023", "the week before 8 May 2023")
    assert notes.first == ("2023-05-07", "2023-05-02", "2023-05-01")
    assert notes.last == ("2023-05-07", "2023-05-02", "2023-05-07")
    props = notes.properties()
    assert props == {"event_said": list(notes.said), "event_means": list(notes.means),
                     "event_first": list(notes.first), "event_last": list(notes.last)}
    assert TimeNotes.from_properties(props) == notes


def test_no_reference_or_no_expression_stores_nothing() -> None:
    assert TimeNotes.of("I went yesterday, on 7 May 2023", None) == TimeNotes()
    empty = TimeNotes.of("Nothing about time here.", SAID_ON_MON)
    assert empty == TimeNotes()
    assert empty.properties() == {"event_said": None, "event_means": None, "event_first": None, "event_last": None}
    assert TimeNotes.from_properties({"event_said": None}) == TimeNotes()
    assert TimeNotes.from_properties({}) == TimeNotes()


def test_insert_notes_after_the_words_as_rendered() -> None:
    """The reader's line: the stored text with tags rendered differently still gets each note after its words;
    an absolute date needs no note; words no longer found are skipped, not misplaced."""
    stored = "Ann <speaker_3>: yesterday I saw it, on 2 May 2023 too, and again last week"
    notes = TimeNotes.of(stored, SAID_ON_MON)
    assert notes.insert("Ann <character_12>: yesterday I saw it, on 2 May 2023 too, and again last week") == (
        "Ann <character_12>: yesterday [= 7 May 2023] I saw it, on 2 May 2023 too, and again last week "
        "[= the week before 8 May 2023]")
    assert notes.insert(stored) == annotate(stored, SAID_ON_MON)  # the same note as the resolver's own
    assert notes.insert("something else entirely") == "something else entirely"
    repeated = TimeNotes.of("yesterday and yesterday", SAID_ON_MON)
    assert repeated.insert("yesterday and yesterday") == "yesterday [= 7 May 2023] and yesterday [= 7 May 2023]"


@pytest.mark.parametrize("bad", [
    {"said": ("yesterday",), "means": (), "first": (), "last": ()},  # lists of different lengths
    {"said": ("yesterday",), "means": ("7 May 2023",), "first": ("7 May 2023",), "last": ("2023-05-07",)},
    {"said": ("",), "means": ("7 May 2023",), "first": ("2023-05-07",), "last": ("2023-05-07",)},
    {"said": ("x" * 201,), "means": ("7 May 2023",), "first": ("2023-05-07",), "last": ("2023-05-07",)},
    {"said": ("a",) * (MAX_TIMES + 1), "means": ("b",) * (MAX_TIMES + 1), "first": ("2023-05-07",) * (MAX_TIMES + 1),
     "last": ("2023-05-07",) * (MAX_TIMES + 1)},
])
def test_malformed_time_notes_are_refused(bad: dict[str, tuple[str, ...]]) -> None:
    with pytest.raises(ValueError):
        TimeNotes(**bad)


def test_a_long_text_keeps_at_most_the_bound() -> None:
    notes = TimeNotes.of(" ".join(["yesterday"] * (MAX_TIMES + 5)), SAID_ON_MON)
    assert len(notes.said) == MAX_TIMES
