"""Time expressions in text, resolved to date intervals against a reference date (no model).

Why: a turn's "yesterday" or "last Saturday" is only words to the retriever and to a small reader, which does no
date arithmetic; a session's start (``started_at``) is known, so the arithmetic can be done once, here, and the
result appended to the searchable text (`annotate`: ``yesterday [= 7 May 2023]``).

`find_times(text, reference)` returns `TimeSpan`s: the character span, the surface text, an inclusive date
interval (`first`, `last`), a granularity and an `approximate` flag. The rules, all deterministic:

- Weeks start on Monday. "last week" / "this week" / "next week" are Monday-to-Sunday weeks before, containing
  and after the reference's week; "the weekend" is that week's Saturday and Sunday. "N weeks ago" is the week N
  before the reference's week (the week that holds the reference minus 7N days).
- Weekdays: "last Friday" (also "this past Friday") is the most recent Friday strictly before the reference;
  "next Friday" is the Friday of the week after the reference's week; "this Friday" is the Friday of the
  reference's week; "this coming Friday" the first Friday strictly after the reference. A weekday alone ("on
  Sunday", "Sunday") is the most recent one strictly before the reference, unless its sentence has a
  future marker ("will", "'ll", "going to", "gonna", "plan", "tomorrow", "next", ...), then the first one
  strictly after. Plurals and "every/each/a Sunday" (recurring) and "Sunday best"-style compounds are skipped.
- "last/next weekend" are the weekends of the previous/next week; "this weekend" the reference week's; "over the
  weekend" the weekend that ended most recently (the reference's own when it falls on one).
- "last night" is the day before the reference; "tonight", "this morning/afternoon/evening" the reference day.
- Seasons are meteorological, northern hemisphere (spring Mar-May, summer Jun-Aug, autumn/fall Sep-Nov, winter
  Dec-Feb, named by the year of its December). "last summer" is the latest summer that ended before the
  reference, "next summer" the first that starts after it, "this summer" the one of the reference's year.
- "in N days/weeks/..." is a future offset, unless its sentence before it has a negation or "first/last/only"
  ("we haven't talked in a few days", "the first time in 3 years": durations); a duration after a past verb
  ("I finished it in 3 weeks") is still misread as future (no part-of-speech model here).
- Vague counts are approximate intervals: "a couple of" = 2, "a few" = 2-4, "several" = 3-7 units back (or
  ahead); "the other day" = 1-7 days before. Each is flagged `approximate`.
- Absolute dates: "7 May 2023", "7th of May, 2023", "May 7, 2023", "2023-05-07", "May 2023", "April.2023",
  "summer of 2022", a year after a preposition ("in 2022", "since 2016") or a text that is only a year. Numeric
  forms other than ISO (05/07/2023) are ambiguous and not read. A day and month without a year ("13 August") take
  the reference's year and are flagged `yearless` (year 2000, a leap year, when there is no reference). A month
  alone is read only after a preposition or last/this/next ("in May", "last March"), never bare ("May I",
  "March on"); "May" must be capitalised. "on the 5th" is the 5th of the reference's month.
- Anchored forms (the forms of LoCoMo's gold answers): "the week before 9 June 2023" (the Monday week before
  the one holding 9 June), "the Sunday before 25 May 2023" (the last Sunday strictly before it), "the weekend
  before ...", "two weekends/weeks/days before ...", "the day after ...", "the week of ...", "first weekend of
  August 2023", "the second Tuesday of May 2023".
- Rendering (`TimeSpan.render`): a day is its date ("7 May 2023"); a week or weekend said relative to the
  reference keeps that day in words ("last week" said on 9 June 2023 is "the week before 9 June 2023", "next
  weekend" "the weekend after ..."), an anchored form read back to the same interval.

Without a reference only absolute expressions are resolved. Spans never overlap: the longest reading wins.

Why this module is over 400 lines: it is one grammar of time expressions whose rules refer to each other (anchors,
counts, weekdays, seasons), with its number words and month names; split apart, the precedence between readings
would be spread over files.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

GRANULARITIES = ("day", "weekend", "week", "month", "season", "year")  # finest first

MONTHS: dict[str, int] = {}
for _i, _name in enumerate(calendar.month_name[1:], start=1):
    MONTHS[_name.lower()] = _i
    MONTHS[_name[:3].lower()] = _i
MONTHS["sept"] = 9
MONTH_NAMES = calendar.month_name[1:]

WEEKDAYS: dict[str, int] = {}
for _i, _name in enumerate(calendar.day_name):
    WEEKDAYS[_name.lower()] = _i
    WEEKDAYS[_name[:3].lower()] = _i
WEEKDAYS.update({"tues": 1, "tue": 1, "weds": 2, "thur": 3, "thurs": 3})

_FULL_WEEKDAYS = {n.lower() for n in calendar.day_name}
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month

NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
                "thirty": 30}
VAGUE = {"a couple of": (2, 2), "a couple": (2, 2), "couple of": (2, 2), "a few": (2, 4), "few": (2, 4),
         "several": (3, 7)}
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "last": -1}

_MONTH_FULL = "|".join(n for n in calendar.month_name[1:] if n != "May")
_MONTH_ABBR = "|".join(["sept"] + [n[:3].lower() for n in calendar.month_name[1:] if n != "May"])
# "May" is case-sensitive (the verb "may"); the other names are not.
MONTH = rf"(?:(?i:{_MONTH_FULL})|May|(?i:{_MONTH_ABBR})\.?)"
WEEKDAY = r"(?i:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
WEEKDAY_SHORT = r"(?i:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|weds?|thurs?|thu|fri|sat|sun)"
NUM = (r"(?:\d{1,3}|a couple of|a couple|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight"
       r"|nine|ten|eleven|twelve|fifteen|twenty|thirty)")
UNIT = r"(?:day|week|weekend|month|year)s?"
SEASON = r"(?i:spring|summer|autumn|fall|winter)"
YEAR = r"(?:19|20)\d\d"
DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"

_FUTURE = re.compile(r"\b(?:will|shall|going to|gonna|plan|plans|planning|planned to|hope to|hoping to|can't wait|"
                     r"cannot wait|looking forward|tomorrow|next|upcoming|about to|intend|want to|wanna)\b|'ll\b",
                     re.I)
_DURATION_IN = re.compile(r"n't\b|\b(?:not|never|first|last|only|best|worst)\b", re.I)
_SENTENCE_END = re.compile(r"[.!?\n]")
_NOT_A_DAY_AFTER = {"best", "school", "schools", "roast", "paper", "papers", "league", "driver", "drivers",
                    "brunch", "funday"}
_COUNT_NOUNS = {"people", "dollars", "bucks", "euros", "pounds", "miles", "km", "kilometers", "meters", "feet",
                "steps", "calories", "words", "pages", "pieces", "times", "followers", "members", "units", "items",
                "views", "likes", "subscribers", "customers", "copies", "hours", "minutes"}
_ORDINAL_DAY_FOLLOWERS = {"at", "and", "but", "so", "when", "i", "we", "in", "or", "then", "because", "too"}


@dataclass(frozen=True)
class TimeSpan:
    """One time expression: `text[start:end]` means the days `first`..`last` (inclusive)."""

    start: int
    end: int
    text: str
    first: date
    last: date
    granularity: str  # one of GRANULARITIES
    approximate: bool = False
    yearless: bool = False  # a day/month said without a year; the year is the reference's (or 2000)
    said_on: date | None = None  # the reference a relative expression was resolved against (None: absolute)

    def render(self) -> str:
        """The interval in words: a week or weekend said relative to a day keeps that day ("last week" said on
        9 June 2023 is "the week before 9 June 2023", `relative_words`); everything else is its dates."""
        if self.said_on is not None and not self.approximate:
            words = relative_words(self.first, self.last, self.granularity, self.said_on)
            if words is not None:
                return words
        return render_interval(self.first, self.last, self.granularity, self.approximate)

    def annotation(self) -> str:
        return f"{self.text} [= {self.render()}]"


# ------------------------------------------------------------------------------------------------ calendar


def _d(d: date) -> str:
    return f"{d.day} {MONTH_NAMES[d.month - 1]} {d.year}"


def monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def week(d: date) -> tuple[date, date]:
    m = monday(d)
    return m, m + timedelta(days=6)


def weekend(d: date) -> tuple[date, date]:
    """The Saturday and Sunday of `d`'s Monday week."""
    sat = monday(d) + timedelta(days=5)
    return sat, sat + timedelta(days=1)


def month_interval(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def shift_month(year: int, month: int, n: int) -> tuple[int, int]:
    k = year * 12 + month - 1 + n
    return k // 12, k % 12 + 1


def season_interval(name: str, year: int) -> tuple[date, date]:
    """The season `name` of `year` (winter: December of `year` to February of the next)."""
    first_month = SEASONS[name.lower()]
    end_y, end_m = shift_month(year, first_month, 2)
    return date(year, first_month, 1), month_interval(end_y, end_m)[1]


def render_interval(first: date, last: date, granularity: str, approximate: bool = False) -> str:
    about = "about " if approximate else ""
    if granularity == "year":
        text = str(first.year) if first.year == last.year else f"{first.year}-{last.year}"
    elif granularity == "season":
        name = next((s for s, m in SEASONS.items() if m == first.month), "season")
        text = f"{name} {first.year}" if first.year == last.year else f"{name} {first.year}-{str(last.year)[2:]}"
    elif granularity == "month":
        text = (f"{MONTH_NAMES[first.month - 1]} {first.year}" if (first.year, first.month) == (last.year, last.month)
                else f"{MONTH_NAMES[first.month - 1]} {first.year} - {MONTH_NAMES[last.month - 1]} {last.year}")
    elif granularity == "week" and last - first == timedelta(days=6) and first.weekday() == 0:
        text = f"the week of {_d(first)}"
    elif granularity == "weekend" and last - first == timedelta(days=1):
        text = f"the weekend of {_d(first)}"
    elif first == last:
        text = _d(first)
    elif (first.year, first.month) == (last.year, last.month):
        text = f"{first.day}-{_d(last)}"
    else:
        text = f"{_d(first)} - {_d(last)}"
    return about + text


_OFFSET_WORDS = ((0, "the {u} of"), (-1, "the {u} before"), (1, "the {u} after"), (-2, "two {u}s before"),
                 (2, "two {u}s after"), (-3, "three {u}s before"), (3, "three {u}s after"))


def relative_words(first: date, last: date, granularity: str, said_on: date) -> str | None:
    """A week or weekend as said relative to `said_on` ("the week before 9 June 2023", "two weekends before ..."),
    or None for other granularities and offsets.

    Why: "last week" said on Friday 9 June 2023 is known only as a week relative to that day; naming it by its
    Monday ("the week of 29 May 2023") adds a computation the speaker never made, and a reader copying it answers
    in a form nobody said (LoCoMo's gold answers say "the week before 9 June 2023"). The words are an anchored
    form this module reads back (`_ANCHOR`) to the same interval, which a test checks.
    """
    if granularity not in ("week", "weekend"):
        return None
    for n, words in _OFFSET_WORDS:
        if _unit_interval(said_on, granularity, n) == (first, last):
            return f"{words.format(u=granularity)} {_d(said_on)}"
    return None


# ------------------------------------------------------------------------------------------------ rules

Resolved = tuple[date, date, str, bool, bool]  # first, last, granularity, approximate, yearless
Rule = Callable[[re.Match[str], date | None, str], Resolved | None]


def _count(word: str) -> tuple[int, int, bool]:
    """(low, high, approximate) of a count word."""
    w = " ".join(word.lower().split())
    if w.isdigit():
        return int(w), int(w), False
    if w in VAGUE:
        lo, hi = VAGUE[w]
        return lo, hi, True
    n = NUMBER_WORDS[w]
    return n, n, False


def _unit_interval(ref: date, unit: str, n: int) -> tuple[date, date]:
    """The `unit` (day/week/weekend/month/year) that is `n` units after `ref`'s (negative: before)."""
    unit = unit.lower().rstrip("s")
    if unit == "day":
        d = ref + timedelta(days=n)
        return d, d
    if unit == "week":
        return week(ref + timedelta(weeks=n))
    if unit == "weekend":
        return weekend(ref + timedelta(weeks=n))
    if unit == "month":
        return month_interval(*shift_month(ref.year, ref.month, n))
    return date(ref.year + n, 1, 1), date(ref.year + n, 12, 31)


def _gran(unit: str) -> str:
    return unit.lower().rstrip("s")


def _ago(m: re.Match[str], ref: date | None, text: str) -> Resolved | None:
    if ref is None:
        return None
    lo, hi, approx = _count(m["n"])
    sign = -1 if m["dir"].lower() in ("ago", "before", "earlier") else 1
    if m.groupdict().get("pre"):  # "in 3 weeks"
        starts = [x.end() for x in _SENTENCE_END.finditer(text, 0, m.start())]
        if _DURATION_IN.search(text, starts[-1] if starts else 0, m.start()):
            return None  # "we haven't talked in a few days", "the first time in 3 years": a duration
        sign = 1
    unit = m["unit"]
    a, b = _unit_interval(ref, unit, sign * lo), _unit_interval(ref, unit, sign * hi)
    first, last = min(a[0], b[0]), max(a[1], b[1])
    return first, last, _gran(unit), approx, False


def _simple_day(m: re.Match[str], ref: date | None, _text: str) -> Resolved | None:
    if ref is None:
        return None
    w = " ".join(m[0].lower().split())
    if w.startswith("the day before yesterday"):
        off = -2
    elif w.startswith("the day after tomorrow"):
        off = 2
    elif w.startswith(("yesterday", "last night")):
        off = -1
    elif w.startswith("tomorrow"):
        off = 1
    else:  # today, tonight, this morning ...
        off = 0
    d = ref + timedelta(days=off)
    return d, d, "day", False, False


def _other_day(m: re.Match[str], ref: date | None, _text: str) -> Resolved | None:
    if ref is None:
        return None
    return ref - timedelta(days=7), ref - timedelta(days=1), "day", True, False


def _rel_weekday(m: re.Match[str], ref: date | None, _text: str) -> Resolved | None:
    if ref is None:
        return None
    which = " ".join(m["which"].lower().split())
    wd = WEEKDAYS[m["wd"].lower()]
    if which == "this" and m["wd"].lower() not in _FULL_WEEKDAYS:
        return None  # "this sat on the shelf"
    if which in ("last", "this past", "past"):
        d = ref - timedelta(days=(ref.weekday() - wd - 1) % 7 + 1)
    elif which in ("this coming", "coming"):
        d = ref + timedelta(days=(wd - ref.weekday() - 1) % 7 + 1)
    elif which == "next":
        d = monday(ref) + timedelta(days=7 + wd)
    else:  # this
        d = monday(ref) + timedelta(days=wd)
    return d, d, "day", False, False


def _rel_period(m: re.Match[str], ref: date | None, _text: str) -> Resolved | None:
    if ref is None:
        return None
    which = " ".join(m["which"].lower().split())
    n = {"last": -1, "this past": -1, "past": -1, "next": 1, "this coming": 1, "coming": 1}.get(which, 0)
    first, last = _unit_interval(ref, m["unit"], n)
    return first, last, _gran(m["unit"]), False, False


def _over_weekend(m: re.Match[str], ref: date | None, _text: str) -> Resolved | None:
    if ref is None:
        return None
    first, last = weekend(ref if ref.weekday() >= 5 else ref - timedelta(days=7))
    return first, last, "weekend", False, False


def _rel_season(m: re.Match[str], ref: date | None, _text: str) -> Resolved | None:
    if ref is None:
        return None
    which = " ".join(m["which"].lower().split())
    name = m["season"].lower()
    candidates = [season_interval(name, y) for y in range(ref.year - 2, ref.year + 2)]
    if which in ("last", "this past", "past"):
        first, last = max(c for c in candidates if c[1] < ref)
    elif which in ("next", "this coming", "coming"):
        first, last = min(c for c in candidates if c[0] > ref)
    elif name == "winter":
        first, last = next(c for c in candidates if c[1] >= ref)
    else:
        first, last = season_interval(name, ref.year)
    return first, last, "season", False, False


def _rel_month(m: re.Match[str], ref: date | None, _text: str) -> Resolved | None:
    if ref is None:
        return None
    which = m["which"].lower()
    month = MONTHS[m["month"].lower().rstrip(".")]
    year = ref.year
    if which == "last":
        year = ref.year if month < ref.month else ref.year - 1
    elif which == "next":
        year = ref.year if month > ref.month else ref.year + 1
    first, last = month_interval(year, month)
    return first, last, "month", False, False


def _iso(m: re.Match[str], _ref: date | None, _text: str) -> Resolved | None:
    try:
        d = date(int(m["y"]), int(m["mo"]), int(m["d"]))
    except ValueError:
        return None
    return d, d, "day", False, False


def _day_month(m: re.Match[str], ref: date | None, _text: str) -> Resolved | None:
    day = int(re.sub(r"\D", "", m["d"]))
    month = MONTHS[m["month"].lower().rstrip(".")]
    yearless = m["y"] is None
    year = int(m["y"]) if m["y"] else (ref.year if ref is not None else 2000)
    try:
        d = date(year, month, day)
    except ValueError:
        return None
    return d, d, "day", False, yearless


def _month_year(m: re.Match[str], _ref: date | None, _text: str) -> Resolved | None:
    first, last = month_interval(int(m["y"]), MONTHS[m["month"].lower().rstrip(".")])
    return first, last, "month", False, False


def _month_alone(m: re.Match[str], ref: date | None, _text: str) -> Resolved | None:
    month = MONTHS[m["month"].lower().rstrip(".")]
    first, last = month_interval(ref.year if ref is not None else 2000, month)
    return first, last, "month", False, True


def _season_year(m: re.Match[str], _ref: date | None, _text: str) -> Resolved | None:
    first, last = season_interval(m["season"], int(m["y"]))
    return first, last, "season", False, False


def _year(m: re.Match[str], _ref: date | None, text: str) -> Resolved | None:
    if m["pre"] is None and text.strip(" \t\n.,;:!?\"'()") != m["y"]:
        return None  # a bare number is a year only after a preposition or when it is the whole text
    after = re.match(r"\s*([A-Za-z]+)", text[m.end():])
    if after and after.group(1).lower() in _COUNT_NOUNS:
        return None  # "in 2000 people"
    y = int(m["y"])
    return date(y, 1, 1), date(y, 12, 31), "year", bool(m["pre"] and m["pre"].lower() in ("around", "circa")), False


def _nth_of_month(m: re.Match[str], _ref: date | None, _text: str) -> Resolved | None:
    """"first weekend of August 2023", "the second Tuesday of May 2023", "last week of June 2023"."""
    year, month = int(m["y"]), MONTHS[m["month"].lower().rstrip(".")]
    k = ORDINALS[m["ord"].lower()]
    mfirst, mlast = month_interval(year, month)
    what = m["what"].lower()
    if what == "weekend":
        sats = [d for d in _days(mfirst, mlast) if d.weekday() == 5]
        sat = sats[k - 1] if k > 0 else sats[-1]
        return sat, sat + timedelta(days=1), "weekend", False, False
    if what == "week":
        mondays = [d for d in _days(mfirst, mlast) if d.weekday() == 0]
        mon = mondays[k - 1] if k > 0 else mondays[-1]
        return mon, mon + timedelta(days=6), "week", False, False
    days = [d for d in _days(mfirst, mlast) if d.weekday() == WEEKDAYS[what]]
    d = days[k - 1] if k > 0 else days[-1]
    return d, d, "day", False, False


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def _ordinal_day(m: re.Match[str], ref: date | None, text: str) -> Resolved | None:
    if ref is None:
        return None
    after = re.match(r"\s*([A-Za-z']+)", text[m.end():])
    if after and after.group(1).lower() not in _ORDINAL_DAY_FOLLOWERS:
        return None  # "on the 5th floor"
    try:
        d = ref.replace(day=int(re.sub(r"\D", "", m["d"])))
    except ValueError:
        return None
    return d, d, "day", False, False


def _bare_weekday(m: re.Match[str], ref: date | None, text: str) -> Resolved | None:
    if ref is None:
        return None
    after = re.match(r"\s*([A-Za-z']+)", text[m.end():])
    if after and after.group(1).lower() in _NOT_A_DAY_AFTER:
        return None
    if text[m.end():m.end() + 1].lower() == "s" or text[m.end():m.end() + 2] == "'s":
        return None
    before = text[:m.start()].lower().split()
    if before and (before[-1] in ("every", "each", "a", "most", "some", "any", "one", "other") or
                   before[-2:] == ["on", "a"]):
        return None
    starts = [x.end() for x in _SENTENCE_END.finditer(text, 0, m.start())]
    sentence_start = starts[-1] if starts else 0
    end = _SENTENCE_END.search(text, m.end())
    sentence = text[sentence_start:end.start() if end else len(text)]
    wd = WEEKDAYS[m["wd"].lower()]
    if _FUTURE.search(sentence):
        d = ref + timedelta(days=(wd - ref.weekday() - 1) % 7 + 1)
    else:
        d = ref - timedelta(days=(ref.weekday() - wd - 1) % 7 + 1)
    return d, d, "day", False, False


# Absolute forms first (then re-anchored by "the week before ..."), then relative ones; a rule's span is its
# group "x" when it has one (the preposition that licenses "in May" is not part of the expression).
_ABSOLUTE: list[tuple[re.Pattern[str], Rule]] = [
    (re.compile(r"\b(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)\b"), _iso),
    (re.compile(rf"(?:\b(?i:the)\s+)?\b(?P<ord>(?i:first|second|third|fourth|last))\s+(?P<what>(?i:weekend|week)|"
                rf"{WEEKDAY})\s+(?i:of|in)\s+(?P<month>{MONTH})(?:\b|(?<=\.))[\s,.]*(?P<y>{YEAR})\b"), _nth_of_month),
    (re.compile(rf"\b(?P<d>{DAY})\s+(?:(?i:of)\s+)?(?P<month>{MONTH})(?:\b|(?<=\.))(?:,?\s*(?P<y>{YEAR})\b)?"),
     _day_month),
    (re.compile(rf"\b(?P<month>{MONTH})\s+(?P<d>{DAY})\b(?:,?\s*(?P<y>{YEAR})\b)?"), _day_month),
    (re.compile(rf"\b(?P<month>{MONTH})(?:\b|(?<=\.))[\s,.]*(?P<y>{YEAR})\b"), _month_year),
    (re.compile(rf"(?:\b(?i:the)\s+)?\b(?P<season>{SEASON})\s+(?:(?i:of)\s+)?(?P<y>{YEAR})\b"), _season_year),
]
_RELATIVE: list[tuple[re.Pattern[str], Rule]] = [
    (re.compile(r"(?i)\bthe\s+day\s+(?:before\s+yesterday|after\s+tomorrow)\b"), _simple_day),
    (re.compile(r"(?i)\b(?:yesterday|today|tonight|tomorrow|last\s+night|this\s+(?:morning|afternoon|evening))\b"),
     _simple_day),
    (re.compile(r"(?i)\bthe\s+other\s+day\b"), _other_day),
    (re.compile(rf"(?i)\b(?P<n>{NUM})\s+(?P<unit>{UNIT})\s+(?P<dir>ago|from\s+now)\b"), _ago),
    (re.compile(rf"(?i)\b(?P<pre>in)\s+(?P<n>{NUM})\s+(?P<unit>{UNIT})(?P<dir>)\b(?!\s+(?:of|in|at|with)\b)"),
     _ago),
    (re.compile(rf"(?i)\b(?P<which>last|next|this\s+past|this\s+coming|this)\s+(?P<wd>{WEEKDAY_SHORT})\b"),
     _rel_weekday),
    (re.compile(r"(?i)\b(?P<which>last|next|this\s+past|this\s+coming|this)\s+(?P<unit>week|weekend|month|year)\b"),
     _rel_period),
    (re.compile(r"(?i)\bover\s+the\s+weekend\b"), _over_weekend),
    (re.compile(rf"(?i)\b(?P<which>last|next|this\s+past|this\s+coming|this)\s+(?P<season>{SEASON})\b"),
     _rel_season),
    (re.compile(rf"\b(?P<which>(?i:last|next|this))\s+(?P<month>{MONTH})(?:\b|(?<=\.))"), _rel_month),
    (re.compile(rf"\b(?i:in|of|since|during|until|till|by|before|after|early|late|mid)\s+(?P<x>(?P<month>{MONTH})"
                rf"(?:\b|(?<=\.)))"), _month_alone),
    (re.compile(rf"(?:\b(?P<pre>(?i:in|since|of|during|by|from|until|till|before|after|around|circa|back\s+in))\s+)?"
                rf"\b(?P<x>(?P<y>{YEAR}))\b(?![-/%\d])"), _year),
    (re.compile(rf"\b(?i:on)\s+(?P<x>(?i:the)\s+(?P<d>{DAY})\b)"), _ordinal_day),
    (re.compile(rf"\b(?P<wd>{WEEKDAY})"), _bare_weekday),
]

# "the week before <date>", "two weekends before <date>", "the Sunday before <date>", "the week of <date>":
# a prefix that re-anchors the absolute date right after it.
_ANCHOR = re.compile(rf"(?:\b(?i:the)\s+)?\b(?:(?P<n>(?i:{NUM}))\s+)?(?P<what>(?i:days?|weeks?|weekends?)|"
                     rf"{WEEKDAY})\s+(?P<rel>(?i:before|after|of|prior\s+to))\s*$")


def _anchored(m: re.Match[str], span: TimeSpan) -> tuple[date, date, str] | None:
    what = m["what"].lower()
    rel = " ".join(m["rel"].lower().split())
    n = _count(m["n"])[0] if m["n"] else 1
    if rel == "of":
        if what.startswith("week") and not what.startswith("weekend") and m["n"] is None:
            first, last = week(span.first)
            return first, last, "week"
        if what.startswith("weekend") and m["n"] is None:
            first, last = weekend(span.first)
            return first, last, "weekend"
        return None
    sign = 1 if rel == "after" else -1
    anchor = span.last if sign > 0 else span.first
    if what in WEEKDAYS:
        wd = WEEKDAYS[what]
        if sign < 0:
            d = anchor - timedelta(days=(anchor.weekday() - wd - 1) % 7 + 1) - timedelta(weeks=n - 1)
        else:
            d = anchor + timedelta(days=(wd - anchor.weekday() - 1) % 7 + 1) + timedelta(weeks=n - 1)
        return d, d, "day"
    unit = _gran(what)
    first, last = _unit_interval(anchor, unit, sign * n)
    return first, last, unit


def find_times(text: str, reference: date | datetime | None = None) -> list[TimeSpan]:
    """Every time expression in `text`, resolved against `reference` (relative ones are skipped without it)."""
    ref = reference.date() if isinstance(reference, datetime) else reference
    taken = _apply(_ABSOLUTE, text, ref, [])
    taken = _reanchor(text, taken)
    return sorted(_apply(_RELATIVE, text, ref, taken, relative=True), key=lambda s: s.start)


def _apply(rules: list[tuple[re.Pattern[str], Rule]], text: str, ref: date | None,
           taken: list[TimeSpan], relative: bool = False) -> list[TimeSpan]:
    taken = list(taken)
    for pattern, rule in rules:
        for m in pattern.finditer(text):
            a, b = m.span("x") if "x" in pattern.groupindex else m.span()
            if any(a < s.end and b > s.start for s in taken):
                continue
            resolved = rule(m, ref, text)
            if resolved is not None:
                first, last, gran, approx, yearless = resolved
                taken.append(TimeSpan(a, b, text[a:b], first, last, gran, approx, yearless,
                                      ref if relative else None))
    return taken


def _reanchor(text: str, spans: list[TimeSpan]) -> list[TimeSpan]:
    """A day preceded by "the week before", "the Sunday before", "two weekends before", "the week of" ..."""
    out: list[TimeSpan] = []
    for span in sorted(spans, key=lambda s: s.start):
        prev_end = out[-1].end if out else 0
        m = _ANCHOR.search(text, prev_end, span.start) if span.granularity == "day" else None
        anchored = _anchored(m, span) if m is not None else None
        if m is not None and anchored is not None:
            first, last, gran = anchored
            out.append(TimeSpan(m.start(), span.end, text[m.start():span.end], first, last, gran,
                                span.approximate, span.yearless))
        else:
            out.append(span)
    return out


def annotate(text: str, reference: date | datetime | None) -> str:
    """`text` with ``[= <resolved date>]`` after each time expression, e.g. ``yesterday [= 7 May 2023]``; the
    text itself is unchanged. Absolute dates that need no arithmetic (a full "7 May 2023") are left alone."""
    out, pos = [], 0
    for span in find_times(text, reference):
        if _needs_note(span):
            out.append(text[pos:span.end] + f" [= {span.render()}]")
            pos = span.end
    return "".join(out) + text[pos:]


def _needs_note(span: TimeSpan) -> bool:
    return span.text.strip() != span.render()


# ------------------------------------------------------------------------------------------------ stored form

_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
MAX_TIMES = 64  # time expressions kept per memory (a memory holds at most 8,000 characters)
MAX_SAID = 200  # characters of one expression as said, or of its rendering
PROPERTIES = ("event_said", "event_means", "event_first", "event_last")


@dataclass(frozen=True)
class TimeNotes:
    """The time expressions of one memory as the graph stores them beside its text: four parallel lists, in the
    order the expressions occur, as the Memory properties `PROPERTIES` (absent when there is none).

    Why parallel lists of strings: Neo4j properties hold flat lists only, and ISO dates compare as strings, so
    Cypher filters on them directly (an expression overlaps [since, until] when ``event_first[i] <= until AND
    event_last[i] >= since``). `said` is the expression as written ("yesterday"), `means` its rendering
    ("7 May 2023"), `first`/`last` the inclusive interval as ISO days. The text itself is never rewritten: the
    reader's line adds ``[= means]`` after each `said` that needs arithmetic (`insert`). The notes are not in
    the search text: added to the clip's BM25 document they cost one LoCoMo dev question of clip recall@2 and
    gained none (docs/conversations.md).
    """

    said: tuple[str, ...] = ()
    means: tuple[str, ...] = ()
    first: tuple[str, ...] = ()
    last: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.said)
        if not (len(self.means) == len(self.first) == len(self.last) == n) or n > MAX_TIMES:
            raise ValueError(f"time notes need four lists of one length (at most {MAX_TIMES})")
        if any(not s or len(s) > MAX_SAID for s in (*self.said, *self.means)):
            raise ValueError(f"a time expression or its rendering is empty or over {MAX_SAID} characters")
        if any(not _ISO_DAY.fullmatch(d) for d in (*self.first, *self.last)):
            raise ValueError("time note dates must be ISO days (YYYY-MM-DD)")

    @classmethod
    def of(cls, text: str, reference: date | datetime | None) -> TimeNotes:
        """The notes of `text` said at `reference` (none without a reference: an undated session stores none)."""
        if reference is None:
            return cls()
        spans = [s for s in find_times(text, reference) if len(s.text) <= MAX_SAID][:MAX_TIMES]
        return cls(tuple(s.text for s in spans), tuple(s.render() for s in spans),
                   tuple(s.first.isoformat() for s in spans), tuple(s.last.isoformat() for s in spans))

    @classmethod
    def from_properties(cls, props: Any) -> TimeNotes:
        """From a row holding the stored properties (missing or null: none)."""
        values = [tuple(props.get(k) or ()) for k in PROPERTIES]
        return cls(*values) if values[0] else cls()

    def properties(self) -> dict[str, list[str] | None]:
        """The Memory properties to store (null removes them: a memory without time expressions has none)."""
        cols = (self.said, self.means, self.first, self.last)
        return {k: (list(v) if self.said else None) for k, v in zip(PROPERTIES, cols, strict=True)}

    def insert(self, text: str) -> str:
        """`text` with ``[= means]`` after each expression that needed arithmetic, found in order from the left,
        so it works on the text as rendered (tags replaced) as well as on the stored text; an expression no
        longer found is skipped."""
        out, pos = [], 0
        for said, means in zip(self.said, self.means, strict=True):
            if said.strip() == means:
                continue
            at = text.find(said, pos)
            if at < 0:
                continue
            end = at + len(said)
            out.append(text[pos:end] + f" [= {means}]")
            pos = end
        return "".join(out) + text[pos:]
