"""The two events of a question about the time between them: each searched for on its own and dated (issue 38).

Why: a question such as "How many days do I have between finishing my collaborative filtering prototype and my
internal demo of the hybrid recommender system?" needs the line of each event with its date. Searched as one
query, the question's words pull the lines of one event (or neither): on the BEAM chats the reader then saw the
first event's date only and answered "14 days" (a sprint's length it read) where the lines give 20 January and 5
February (8 temporal questions of chats 4, 7, 9 and 10: 0 right through `ask`). And the 1.5B reader, asked for
the two dates (`durations.py`), often answers with a bare number instead.

What this module does, without a model:
- `event_phrases` splits such a question into its two event phrases: "between A and B" (at the first "and" that
  opens a new phrase: "and the …", "and my …", "and when …", so "my unit and integration tests" stays one),
  "after A did I B", "from A until B". A question of another shape, or one that states the span itself ("when I
  checked in two days later"), gives None and nothing changes.
- the controller searches each phrase (`control.py`, `EVENT_LINES` new lines each, shown in the first round),
  and `event_day` dates an event from the lines its search returned that the reader was shown: the best line by
  its cosine to the phrase, raised for holding the phrase's words and for naming a day beside them, dated by the
  day it names nearest after (else before) the event's words in their clause ("my first internal demo on January
  20, 2024"), else by the day the line was said (its session's date). An event that is an act of setting,
  deciding or confirming something ("setting my goal to solve 5 problems by February 5", "when I confirmed the
  deadline") happened when it was reported, not on the day it set: such a line's days after the day it was said
  are what was set, so only a day on or before it dates the act ("I booked it yesterday");
- the reader is told which day each event's best line gives (`EventDays.note`), and an answer that does not hold
  two dates is replaced by the time between the two event days (`EventDays.answer`), "about 2 weeks (16 days),
  from 20 January 2024 to 5 February 2024" (two events of one session: "0 days: both happened in the same
  session, on …"), its trace note naming the lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from m3graph.dates import TimeSpan, find_times
from m3graph.reasoning.durations import span_answer

EVENT_LINES = 3  # new lines each event's search adds to the first round
_WORD = re.compile(r"[a-z0-9]+")
# A word that opens a new noun or clause after "and": where "between A and B" splits.
_OPENS = frozenset(_WORD.findall(
    "when the my our your his her their a an i i'm we you he she they then that this those these after before"))
_STOP = frozenset(_WORD.findall(
    "a an the of to in on at for from by with and or is are was were be been do did does i my me we our you your "
    "when that this it its have has had first later then"))
_BETWEEN = re.compile(r"\bbetween\s+(?P<rest>.+)$", re.IGNORECASE)
_AFTER = re.compile(r"\b(?:after|before)\s+(?P<a>.+?)\s+(?:did|do|does|was|were|had|have|will)\s+"
                    r"(?:I|you|we|he|she|they|it|[A-Z][\w-]*)\s+(?P<b>.+)$")
_FROM = re.compile(r"\bfrom\s+(?P<a>.+?)\s+(?:until|till|to)\s+(?P<b>(?:when|the|my|I)\b.+)$", re.IGNORECASE)
_LEAD = re.compile(r"^(?:when\s+|the\s+time\s+(?:when\s+)?)", re.IGNORECASE)


def _clean(phrase: str) -> str:
    return _LEAD.sub("", phrase.strip().rstrip("?.! ").strip())


_GIVEN_SPAN = re.compile(r"\b(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|a few)\s+"
                         r"(?:day|week|month|year)s?\s+(?:later|after|before|earlier|apart)\b", re.IGNORECASE)


def gives_the_span(question: str) -> bool:
    """Whether the question itself states the time between the events ("when I checked in two days later"): then
    the reader's answer stands, the events' days are not computed over it."""
    return bool(_GIVEN_SPAN.search(question))


def event_phrases(question: str) -> tuple[str, str] | None:
    """The two event phrases of a question about the time between them (module docstring), or None."""
    text = " ".join(question.split())
    if gives_the_span(text):
        return None
    m = _BETWEEN.search(text)
    if m:
        rest = m.group("rest")
        cuts = [c for c in re.finditer(r"\s+and\s+", rest, re.IGNORECASE)]
        if not cuts:
            return None
        opening = [c for c in cuts if (_WORD.findall(rest[c.end():].lower()) or [""])[0] in _OPENS]
        cut = (opening or cuts)[0]
        a, b = _clean(rest[:cut.start()]), _clean(rest[cut.end():])
        return (a, b) if a and b else None
    for pattern in (_AFTER, _FROM):
        m = pattern.search(text)
        if m:
            a, b = _clean(m.group("a")), _clean(m.group("b"))
            return (a, b) if a and b else None
    return None


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and not w.isdigit()}


def _said_on(label_date: str | None) -> date | None:
    if not label_date:
        return None
    try:
        return datetime.strptime(label_date, "%d %B %Y").date()
    except ValueError:
        return None


@dataclass(frozen=True)
class EventDay:
    """One event's day and where it comes from."""

    phrase: str
    day: date
    label: str
    named: bool  # the line names the day (else: the day the line was said)

    def describe(self) -> str:
        how = "the day its line names" if self.named else "the day its line was said"
        return f'"{self.phrase}": {self.day.day} {self.day:%B %Y} ({how}, {self.label})'


def _gap(line: str, start: int, end: int, a: int, b: int) -> int:
    """How far a date (start, end) sits from an event word (a, b): a date after the words is nearer than one as
    far before them ("the demo is on 20 January" rather than "Sprint 1 ends on 19 January; the demo ..."), and one
    in another clause or sentence is far."""
    between = line[b:start] if start >= b else line[end:a]
    gap = len(between) if start >= b else 2 * len(between)
    return gap + (100 if re.search(r"[.;!?]\s", between) else 0)


# An event phrase that opens with an act of setting, deciding or confirming (module docstring).
_ACT = re.compile(r"^(?:(?:I|we|you)\s+)?(?:first\s+)?(?:set|setting|confirm(?:ed|ing)|decid(?:ed|ing)|agree(?:d|ing)|"
                  r"commit(?:ted|ting)|book(?:ed|ing)|schedul(?:ed|ing)|announc(?:ed|ing)|promis(?:ed|ing))\b",
                  re.IGNORECASE)


def is_act(phrase: str) -> bool:
    """Whether the event is an act of setting, deciding or confirming something (dated by when it was reported)."""
    return bool(_ACT.match(phrase.strip()))


COVER_WEIGHT = 0.1  # a line holding all the event's content words gains this over its cosine
DAY_WEIGHT = 0.05  # a line that names a day beside the event's words gains this (the question asks for dates)


def _named_day(line: str, said: date | None, want: set[str], act: bool = False) -> date | None:
    """The day a line names nearest after (else before) the event's words, in their clause; None if it names none.
    For an act (`is_act`), only a day on or before the day the line was said."""
    spots = [(m.start(), m.end()) for m in _WORD.finditer(line.lower()) if _stem(m.group(0)) in want]
    days = [s for s in find_times(line, said) if s.granularity == "day" and not s.approximate
            and (said is not None or not s.yearless)]
    if act:
        days = [s for s in days if said is not None and _dated(s, said) <= said]
    if not days or not spots:
        return None
    best = min(days, key=lambda s: min(_gap(line, s.start, s.end, a, b) for a, b in spots))
    if min(_gap(line, best.start, best.end, a, b) for a, b in spots) >= 100:
        return None  # the only days are in another sentence
    return _dated(best, said)


def _dated(span: TimeSpan, said: date | None) -> date:
    """A found day; one said without a year takes the year of the day it was said."""
    day: date = span.first
    return day.replace(year=said.year) if span.yearless and said else day


def event_day(phrase: str, lines: Sequence[tuple[str, str, float]], dates: Mapping[str, str]) -> EventDay | None:
    """The day of one event from its search's lines (label, line, cosine to the phrase): the best line by its
    cosine, plus `COVER_WEIGHT` times the share of the phrase's content words it holds, plus `DAY_WEIGHT` when it
    names a day beside them; dated by that day, else by the day it was said (module docstring)."""
    want, act = content_words(phrase), is_act(phrase)
    best: tuple[float, EventDay] | None = None
    for label, line, cosine in lines:
        said = _said_on(dates.get(label))
        named = _named_day(line, said, want, act)
        if named is None and said is None:
            continue
        cover = len(want & content_words(line)) / len(want) if want else 0.0
        score = cosine + COVER_WEIGHT * cover + (DAY_WEIGHT if named else 0.0)
        if best is None or score > best[0]:
            best = (score, EventDay(phrase, named or said, label, named is not None))  # type: ignore[arg-type]
    return best[1] if best else None


@dataclass(frozen=True)
class EventDays:
    """The two events' days, where both were found."""

    first: EventDay
    second: EventDay

    def note(self) -> str:
        """What the reader is told beside the lines."""
        return (f"The lines that best match the question's two events give: {self.first.describe()}; "
                f"{self.second.describe()}.")

    def answer(self) -> str:
        return span_answer(self.first.day, self.second.day, same_session=self.first.label == self.second.label)

    def trace(self) -> str:
        return f"event days: {self.first.describe()}; {self.second.describe()}"
