"""A time the question names, read as "as of": the facts tools then show the version that held then (issue 38).

Why: "Where did Nora live in April 2025?" over a memory in which Nora moved from Lisbon to Porto in May was
answered "Porto": the controller showed facts as they hold now, and read old versions only for words such as
"before" or "used to" (`memory_tools.asks_about_the_past`). The search has the machinery (`as_of`: the version of
each fact valid at a point of event time, `m3graph.fact_versions`); this module gives the controller the point.

The rule, deterministic (`m3graph.dates.find_times` reads the time):
- the question names exactly one time, not approximate, with its year ("in April 2025", "on 3 May 2025", "in
  2024", "in the summer of 2024"), or a relative month, season or year ("last summer", "last March", "last
  year") read against the latest session date of the question's scope (`reference`), the day the conversation
  last spoke; a relative day or week ("yesterday", "last week") is left alone: which day it means depends on
  when the question is asked;
- the point is the last day of that time ("in April 2025" -> 30 April 2025), or the day before it when the time
  follows "before" / "prior to"; a time after "after", "since", "until" or "between" is a range, not a point,
  and sets nothing;
- a question that asks for a time ("When did ...?", "How long ...?") names a time as a filter, not a point of
  view: it sets nothing either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from m3graph.dates import find_times
from m3graph.graphdb.executor import Executor
from m3graph.reasoning.durations import asks_for_duration
from m3graph.reasoning.grounding import asks_when

_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_BEFORE = re.compile(r"\b(?:before|prior to)\s+(?:the\s+)?$", re.IGNORECASE)
_RANGE = re.compile(r"\b(?:after|since|until|till|between|from|through)\s+(?:the\s+)?$", re.IGNORECASE)
_HOW_LONG = re.compile(r"\bhow\s+(?:long|many\s+(?:days|weeks|months|years))\b", re.IGNORECASE)
RELATIVE_OK = ("month", "season", "year")  # relative times read against the scope's last date
_ANY_DAY = date(2000, 1, 3)  # to learn whether a question holds a relative time at all (its words only)


@dataclass(frozen=True)
class AsOf:
    """The point a question's time names: `day` (ISO, what `SearchRequest.as_of` takes) and the words it came
    from."""

    day: date
    words: str

    @property
    def iso(self) -> str:
        return self.day.isoformat()

    def note(self) -> str:
        """What the trace says of it."""
        return f"facts as of {self.iso} ({self.words!r} in the question)"


def question_as_of(question: str, reference: Callable[[], date | None] = lambda: None) -> AsOf | None:
    """The as-of point a question names (see the module docstring), or None; `reference` is called only for a
    relative time."""
    if asks_when(question) or asks_for_duration(question) or _HOW_LONG.search(question):
        return None
    spans = find_times(question)
    if not spans and find_times(question, _ANY_DAY):  # a relative time: read against the scope's last date
        ref = reference()
        if ref is None:
            return None
        spans = [s for s in find_times(question, ref) if s.granularity in RELATIVE_OK]
    if len(spans) != 1:
        return None
    span = spans[0]
    if span.approximate or span.yearless:
        return None
    if span.said_on is not None and not _YEAR.search(span.text) and span.granularity not in RELATIVE_OK:
        return None
    before = question[:span.start]
    if _RANGE.search(before):
        return None
    day = span.first - timedelta(days=1) if _BEFORE.search(before) else span.last
    return AsOf(day, span.text)


def latest_date(ex: Executor, videos: Sequence[str] | None, before_clip: int | None) -> date | None:
    """The latest session start of the scope (one to three sources; none when the scope is every source or
    holds no dated session): what a relative time in a question counts back from."""
    if not videos or len(videos) > 3:
        return None
    days: list[date] = []
    for video in videos:
        for row in ex.read("explore/sessions", source_id=video):
            started = row.get("started_at")
            if started is None or (before_clip is not None and row["clip_index"] > before_clip):
                continue
            native = started.to_native() if hasattr(started, "to_native") else started
            days.append(native.date() if isinstance(native, datetime) else native)
    return max(days, default=None)
