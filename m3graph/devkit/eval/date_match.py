"""Date-aware answer match for temporal questions: "May 21, 2023" is right for "The sunday before 25 May 2023".

Why: the word-overlap scorer (`judge.answer_match`) needs the gold's numbers in the answer, so a reader that does
the arithmetic ("21 May 2023") is scored wrong against a gold that does not ("the Sunday before 25 May 2023"),
and one that copies the relative form is scored right without having resolved anything. This scorer compares
dates instead, using the resolver of `m3graph.dates` for both sides.

Rules (`same_date`):
- The gold's date is its longest time expression, resolved to an interval at its own granularity: "7 May 2023"
  a day, "The week before 9 June 2023" the Monday-to-Sunday week before the one holding 9 June (29 May - 4 June
  2023; the same reading the resolver gives "last week" said on 9 June, which is how these golds were written),
  "The Sunday before 25 May 2023" the last Sunday strictly before it (21 May), "the weekend before ..." that
  week's Saturday and Sunday, "May 2023" a month, "2022" or "Since 2016" a year, "The summer of 2022" June to
  August. A gold with no date in it ("4 years", "her mother") or only a relative one and no `reference` ("10
  years ago") is not a date: the answer is then not right by this scorer (other scorers still apply).
- The answer is right when any time expression in it lies inside the gold's interval: as fine as the gold or
  finer ("21 May 2023" for a week that holds it), never coarser ("May 2023" for "7 May 2023" is wrong). Extra
  words and extra dates are not penalised, as in `answer_match`.
- Answers are read in the resolver's forms: ISO (2023-05-21), day-month name ("21 May 2023", "May 21, 2023"),
  month and year, relative expressions against `reference` when one is given. Numeric day/month forms
  ("05/07/2023") are ambiguous between conventions and are not read.
- A day or month without a year (gold "13 August", or an answer "21 May" when there is no reference) is
  compared on month and day only: the unstated year is not a contradiction.
"""

from __future__ import annotations

from datetime import date

from m3graph.dates import TimeSpan, find_times

__all__ = ["gold_span", "same_date"]


def _clean(text: str) -> str:
    """Typos seen in gold answers: a stray backtick ("3` July 2023"), curly quotes."""
    return " ".join(text.replace("`", "").replace("\u2019", "'").split())


def gold_span(gold: str, reference: date | None = None) -> TimeSpan | None:
    """The date a gold answer names (its longest time expression), or None when it names none."""
    spans = find_times(_clean(gold), reference)
    return max(spans, key=lambda s: (s.end - s.start, -s.start)) if spans else None


def _in_year(d: date, year: int) -> date | None:
    try:
        return d.replace(year=year)
    except ValueError:  # 29 February
        return None


def _inside(p: TimeSpan, g: TimeSpan, ignore_year: bool) -> bool:
    first, last = p.first, p.last
    if ignore_year:
        if first.year != last.year:
            return False
        mapped_first, mapped_last = _in_year(first, g.first.year), _in_year(last, g.first.year)
        if mapped_first is None or mapped_last is None:
            return False
        first, last = mapped_first, mapped_last
    return g.first <= first and last <= g.last


def same_date(predicted: str | None, gold: str, reference: date | None = None) -> bool:
    """Whether `predicted` names the date of `gold` at the gold's granularity (see the module doc)."""
    if not predicted or not predicted.strip():
        return False
    g = gold_span(gold, reference)
    if g is None:
        return False
    for p in find_times(_clean(predicted), reference):
        if _inside(p, g, ignore_year=g.yearless or (p.yearless and reference is None)):
            return True
    return False
