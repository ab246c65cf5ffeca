"""A time the question ties to an event the memory holds, read as "as of" (issue 38, item 3).

Why: `as_of.py` reads a time the question names in words ("in April 2025"); people also name a time by what was
true then: "Where did Nora work when she lived in Lisbon?", "What database did I use before I switched to
Postgres?". The memory knows when that was: the fact whose value is Lisbon (Nora · live in) held over an interval
of event time, recorded on the slot's versions (`m3graph.fact_versions`). This module turns the clause into that
interval's point, so the facts tools show every other fact as it held then, the same machinery an explicit
`as_of` uses.

The rule, deterministic, no model:
- the clause follows "when", "while", "whilst", "back when", "at the time", "during the time" or "before"; a
  question that asks for a time or a duration ("When did ...?", "How many days between when I ... and when I
  ...?") sets nothing, nor does a clause after "between", "from", "since", "until" or "after" (a range); quoted
  words are left out (what someone said is not an event the facts hold);
- the clause's word spans (one to five words, up to the next comma, semicolon or question mark) are looked up as
  the values of facts (`Thing` keys: the statement parser's normalised names, one index seek each): a span that is
  no fact's value costs a seek and nothing else;
- the found versions must be one slot (one subject and attribute), or the clause names the subject of exactly one
  of them; otherwise the clause is ambiguous and sets nothing;
- "when"/"while": the version held until a later statement ended it; the point is the last moment it held (one
  second before the ending statement's time on a dated source, the clip before the ending clip otherwise). A
  version that still holds means "now", which the facts show anyway: nothing is set;
- "before": the version must have ended an earlier one (a change: "before I switched to Postgres"); the point is
  just before it began (one second before on a dated source, the clip before its first clip otherwise).
A time named in words wins: the controller asks this module only when `as_of.question_as_of` found none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from m3graph.fact_versions import OPEN
from m3graph.graphdb.executor import Executor, Row
from m3graph.graphdb.types import clip_key
from m3graph.reasoning.as_of import AsOf
from m3graph.reasoning.durations import asks_for_duration
from m3graph.reasoning.grounding import asks_when
from m3graph.statements import normalise_name

_ANCHOR = re.compile(r"\b(?P<word>back when|at the time|during the time|when|while|whilst|before)\s+"
                     r"(?P<clause>[^?,;.!]+)", re.IGNORECASE)
_MEASURES = re.compile(r"\bhow\s+(?:long|much\s+time|many\s+(?:days|weeks|months|years|hours|minutes))\b",
                       re.IGNORECASE)
_RANGE_BEFORE = re.compile(r"\b(?:between|from|since|until|till|after|and)\s*$", re.IGNORECASE)
_QUOTED = re.compile(r"[\"“][^\"”]*[\"”]|(?:(?<=\s)|^)'[^']*'(?=[\s?.,!;]|$)")
_WORD = re.compile(r"[A-Za-z0-9][\w'&.-]*")
# Words that are never a fact's whole value on their own: a span made only of them is not looked up.
_FUNCTION = frozenset(_WORD.findall(
    "i me my we our us you your he him his she her they them their it its this that these those a an the of to in "
    "on at for with from by as and or but was were is are be been being had has have do did does used use using "
    "still then there here so"))
_MAX_SPAN = 5
_MAX_NAMES = 60
_MAX_VERSIONS = 50


@dataclass(frozen=True)
class EventPoint:
    """The as-of point a question's event clause names: `as_of` in the form `SearchRequest.as_of` takes (an
    ISO instant, or `SOURCE#N` on an undated source), the clause, and the fact it was read from."""

    as_of: str
    words: str
    fact: str

    def as_day(self) -> AsOf | None:
        """The point as a day for the answer checks' "held on" marks (None on an undated source)."""
        if "#" in self.as_of:
            return None
        # The point is a second before a statement made on day D: the whole of D-1 is the last day that held.
        return AsOf((datetime.fromisoformat(self.as_of) + timedelta(seconds=1)).date() - timedelta(days=1),
                    self.words)

    def note(self) -> str:
        """What the trace says of it."""
        return f"facts as of {self.as_of} ({self.words!r}: {self.fact})"


def anchor_clause(question: str) -> tuple[str, str] | None:
    """("when" or "before", the clause) of the first event clause in the question, or None. A question that asks
    for a time or a duration ("When did ...?", "How many days between when I ... and when I ...?") names events
    to measure between, not a point of view: None."""
    if asks_when(question) or asks_for_duration(question) or _MEASURES.search(question):
        return None
    question = _QUOTED.sub(" ", question)  # a quoted line is what was said, not an event the facts hold
    for match in _ANCHOR.finditer(question):
        if not question[:match.start()].strip() or _RANGE_BEFORE.search(question[:match.start()]):
            continue
        word = match.group("word").lower()
        return ("before" if word == "before" else "when"), match.group("clause").strip()
    return None


def candidate_names(clause: str) -> list[str]:
    """The clause's word spans (longest first) as the statement parser keys a fact's value."""
    words = _WORD.findall(clause)
    out: list[str] = []
    for size in range(min(_MAX_SPAN, len(words)), 0, -1):
        for start in range(len(words) - size + 1):
            span = words[start:start + size]
            if all(w.lower() in _FUNCTION for w in span):
                continue
            name = normalise_name(" ".join(span))
            if name and name not in out:
                out.append(name)
    return out[:_MAX_NAMES]


def _ended(row: Row) -> tuple[float, str] | None:
    """(event order, clip key) of the earliest statement that ended this version, if one did."""
    ends = [(float(e["order"]), str(e["clip_key"])) for e in row["ended_by"] or () if e.get("clip_key")]
    return min(ends) if ends else None


def _clip_index(key: str) -> int:
    return int(key.rpartition("#")[2])


def _instant(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def _point(kind: str, row: Row, before_clip: int | None) -> str | None:
    """The as-of point for one version (see the module docstring), or None when it names "now" or nothing."""
    source = str(row["source_id"])
    starts = [float(x) for x in row["valid_from_at"] or ()]
    ends = [float(x) for x in row["valid_to_at"] or ()]
    first_clip = int(row["clip_index"])
    if kind == "before":
        if not row["changed_from"]:  # nothing held before it: "before" names no change
            return None
        if starts:
            return _instant(starts[0] - 1)
        return clip_key(source, first_clip - 1) if first_clip > 0 else None
    ended = _ended(row)
    if ended is None or (before_clip is not None and _clip_index(ended[1]) > before_clip):
        return None  # it still holds (or held at the question's point): the facts show it as they are
    closed = [e for e in ends if e < OPEN]
    if closed:
        return _instant(max(closed) - 1)
    end_clip = _clip_index(ended[1])
    return clip_key(source, end_clip - 1) if end_clip - 1 >= first_clip else None


def event_as_of(question: str, ex: Executor, videos: Sequence[str] | None,
                before_clip: int | None = None) -> EventPoint | None:
    """The as-of point of the event clause in `question`, read from the facts of the scope (`videos`, or every
    source), or None (no clause, no fact with that value, an ambiguous one, or one that still holds)."""
    found = anchor_clause(question)
    if found is None:
        return None
    kind, clause = found
    names = candidate_names(clause)
    if not names:
        return None
    rows = ex.read("facts/anchor_versions", sources=list(videos) if videos else None, names=names,
                   k=_MAX_VERSIONS)
    if before_clip is not None:
        rows = [r for r in rows if int(r["clip_index"]) <= before_clip]
    slots = {str(r["slot_key"]) for r in rows}
    if len(slots) > 1:  # the clause must name whose fact it is
        said = {normalise_name(w) for w in _WORD.findall(clause)} | {normalise_name(clause)}
        rows = [r for r in rows if normalise_name(str(r["slot_subject"])) in said]
        slots = {str(r["slot_key"]) for r in rows}
    if len(slots) != 1:
        return None
    # Longest value first (the clause's most specific name), then the latest statement of it.
    rows.sort(key=lambda r: (-len(str(r["slot_value"])), -int(r["clip_index"])))
    row = rows[0]
    point = _point(kind, row, before_clip)
    if point is None:
        return None
    fact = f"{row['slot_key']} = {row['slot_value']}"
    return EventPoint(point, f"{'before' if kind == 'before' else 'when'} {clause}", fact)
