"""The date-aware answer match: right and wrong answers against gold answers in the benchmark's forms."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from m3graph.devkit.eval.date_match import gold_span, same_date
from m3graph.devkit.eval.runner import summarize

D = date

# (predicted, gold, reference, right?)
CASES = [
    # the gold's arithmetic done by the answer
    ("May 21, 2023", "The sunday before 25 May 2023", None, True),
    ("21 May 2023", "The sunday before 25 May 2023", None, True),
    ("2023-05-21", "The sunday before 25 May 2023", None, True),
    ("She ran it on Sunday, 21 May 2023.", "The sunday before 25 May 2023", None, True),
    ("the Sunday before May 25, 2023", "The sunday before 25 May 2023", None, True),
    ("25 May 2023", "The sunday before 25 May 2023", None, False),  # the anchor is not the date
    ("May 28, 2023", "The sunday before 25 May 2023", None, False),
    ("The week of May 29, 2023", "The week before 9 June 2023", None, True),
    ("June 2, 2023", "The week before 9 June 2023", None, True),
    ("9 June 2023", "The week before 9 June 2023", None, False),
    ("June 5, 2023", "The week before 9 June 2023", None, False),
    ("June 2023", "The week before 9 June 2023", None, False),  # coarser than the gold
    ("14 July 2023", "The Friday before 15 July 2023", None, True),
    ("15 July 2023", "The weekend before 17 July 2023", None, True),
    ("8 July 2023", "two weekends before 17 July 2023", None, True),
    ("16 July 2023", "two weekends before 17 July 2023", None, False),
    ("26 July 2023", "Two weeks before 11 August 2023", None, True),
    ("5 August 2023", "first weekend of August 2023", None, True),
    ("2 July 2023", "The sunday before 3` July 2023", None, True),  # a typo in the gold
    # absolute golds at each granularity
    ("7 May 2023", "7 May 2023", None, True),
    ("May 7, 2023", "7 May 2023", None, True),
    ("6 May 2023", "7 May 2023", None, False),
    ("7 May 2022", "7 May 2023", None, False),
    ("May 2023", "7 May 2023", None, False),
    ("05/07/2023", "7 May 2023", None, False),  # numeric day/month order is not read
    ("19 January 2023", "19 January, 2023", None, True),
    ("May 2023", "May, 2023", None, True),
    ("15 May 2023", "May, 2023", None, True),
    ("April 2023", "April.2023", None, True),
    ("2022", "2022", None, True),
    ("In 2022, I think", "2022", None, True),
    ("the summer of 2022", "2022", None, True),
    ("2021", "2022", None, False),
    ("2022", "May 2023", None, False),
    ("July 2022", "The summer of 2022", None, True),
    ("2022", "The summer of 2022", None, False),
    ("August 2022", "Around August 2022", None, True),
    ("2016", "Since 2016", None, True),
    ("August 13", "13 August", None, True),  # a yearless gold is compared on month and day
    ("13 August 2023", "13 August", None, True),
    ("12 August", "13 August", None, False),
    ("7 May", "7 May 2023", None, True),  # an unstated year is not a contradiction
    # relative answers against the reference
    ("yesterday", "7 May 2023", D(2023, 5, 8), True),
    ("yesterday", "7 May 2023", None, False),
    ("last week", "The week before 9 June 2023", D(2023, 6, 9), True),
    ("last week", "The week before 9 June 2023", D(2023, 6, 20), False),
    ("last Friday", "The Friday before 15 July 2023", D(2023, 7, 15), True),
    # not dates
    ("I don't know", "7 May 2023", None, False),
    ("", "2022", None, False),
    (None, "2022", None, False),
    ("Caroline went to the group", "7 May 2023", None, False),
    ("May I say 2023", "May 2023", None, False),
    ("4 years", "4 years", None, False),  # a duration is not a date
    ("10 years ago", "10 years ago", None, False),  # relative gold, no reference
]


@pytest.mark.parametrize(("predicted", "gold", "ref", "right"), CASES,
                         ids=[f"{c[0]!r}~{c[1]!r}@{c[2]}" for c in CASES])
def test_same_date(predicted: str | None, gold: str, ref: date | None, right: bool) -> None:
    assert same_date(predicted, gold, ref) is right


def _conversations() -> Path | None:
    root = Path(__file__).resolve().parents[2]
    for base in (root.parent, root.parent.parent):
        path = base / "shared" / "data" / "conversations"
        if any(path.glob("locomo-*.json")):
            return path
    return None


def test_real_temporal_golds_are_read_as_dates() -> None:
    """Every temporal gold of the dev set that names a year is read as a date, and the answer that states that
    date in the canonical form (the resolver's rendering of a day, or the gold itself) is right."""
    directory = _conversations()
    if directory is None:
        pytest.skip("the conversation dev set (shared/data/conversations) is not beside this checkout")
    golds = [str(q["answer"]) for f in sorted(directory.glob("locomo-*.json"))
             for q in json.loads(f.read_text(encoding="utf-8"))["qa"] if q["category"] == 2]
    dated = [g for g in golds if any(str(y) in g for y in range(1990, 2030))]
    assert len(dated) > 60
    unread = [g for g in dated if gold_span(g) is None]
    assert unread == []
    for g in dated:
        span = gold_span(g)
        assert span is not None
        assert same_date(g, g), g
        assert not same_date(str(span.first.year - 1), g), g
        if span.granularity == "day":
            assert same_date(f"{span.first.day} {span.first:%B %Y}", g), g


def _record(rid: str, types: list[str], gt: str, answer: str) -> dict[str, object]:
    return {"id": rid, "types": types, "tags": list(types), "gt": gt, "answer": answer, "verdict": "no",
            "outcome": "answered", "tokens": {"answerer": {"prompt": 1, "completion": 1},
                                              "judge": {"prompt": 1, "completion": 1}},
            "latency_s": {"answerer": 1.0, "judge": 0.1}, "judge": {"model": "m"}}


def test_report_counts_same_date_for_temporal_questions_beside_the_unchanged_answer_match() -> None:
    records = [
        _record("t1", ["temporal"], "The sunday before 25 May 2023", "21 May 2023"),  # only the date matches
        _record("t2", ["temporal"], "7 May 2023", "On 7 May 2023."),  # both
        _record("t3", ["temporal"], "2022", "2021"),  # neither
        _record("s1", ["single-hop"], "7 May 2023", "2023-05-07"),  # not temporal: the date scorer is not used
    ]
    report = summarize(records)
    assert report.match_total is not None and report.match_total.correct == 1  # the old figure, unchanged
    assert report.temporal_date_match is not None
    assert (report.temporal_date_match.n, report.temporal_date_match.correct) == (3, 2)
    assert report.to_dict()["temporal_date_match"] == {"n": 3, "correct": 2, "accuracy": 0.6667}
    assert "temporal answer match or same date: 66.7% (2/3)" in report.format()
    assert summarize(records[3:]).temporal_date_match is None
