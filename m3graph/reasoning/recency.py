"""The newest statement wins at answer time: statements on one slot, shown in time order with a "latest" mark.

Why: the graph versions facts it can read as slots (`m3graph.fact_versions`), and a search shows only the current
version; but a conversation's own turns are never superseded, so evidence can hold "I live in Lisbon" (March) and
"I moved to Porto" (May) side by side, and a small reader takes whichever ranks first (issue 38: an update
answered with the old value about half the time). Here, over the lines one question was shown, no model:

- each line's statements are read as the graph reads them: a conversation turn through
  `m3graph.speech_statements.read_turn` (first person -> its speaker), any other line through
  `m3graph.statements.parse_statement` (the name beside a tag, `names.py`, is the subject);
- statements on one single-valued slot (subject · attribute) with different values, said at different times,
  are a change; the reader is shown each in time order with its date, the last marked latest (or, when the
  question names a time, `as_of.py`, the one said last by then marked as holding then);
- an answer that gives an older value of such a slot and not the one that holds is given the holding value
  instead (`newest_answer`), unless the question asks about the past ("before", "used to":
  `memory_tools.asks_about_the_past`) without naming a time.

A statement the readers cannot parse takes no part: a missed change leaves the lines as they were.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from m3graph.dates import find_times
from m3graph.fact_versions import single_valued
from m3graph.reasoning.attribution import split_speaker
from m3graph.speech_statements import read_turn
from m3graph.statements import Statement, parse_statement

_NAMED_TAG = re.compile(r"(?<=\w)\s*\(?<character_\d+>\)?")  # "Nora (<character_1>)", "Nora <character_1>"
_SUPERSEDED = re.compile(r"\s*\(superseded [^)]*\)\s*$")
_NOTE = re.compile(r"\s*\[= [^\]]*\]")
_CLIP = re.compile(r"CLIP_(\d+)$")
SENTENCE_CHARS = 160  # a statement as the note quotes it


@dataclass(frozen=True)
class Said:
    """One statement read from one shown line, with when it was said."""

    label: str
    line: str
    day: date | None
    order: tuple[date, str, int, int]  # when it was said: day, source, clip, place among the shown lines
    sentence: str
    statement: Statement


@dataclass(frozen=True)
class Change:
    """Statements on one slot with different values, oldest first; `holding` is the index of the one that holds
    (the latest, or the latest said by the as-of day)."""

    slot: str
    said: tuple[Said, ...]
    holding: int

    @property
    def value(self) -> str:
        return self.said[self.holding].statement.value


def day_of(text: str | None) -> date | None:
    """The day a shown date ("8 May 2023") means."""
    spans = find_times(text) if text else []
    return spans[0].first if spans else None


def _order(label: str, day: date | None, i: int) -> tuple[date, str, int, int]:
    video, _, clip = label.rpartition("CLIP_")
    return (day or date.min, video, int(clip) if clip.isdigit() else 0, i)


def statements(shown: Sequence[tuple[str, str]], dates: Mapping[str, str]) -> list[Said]:
    """Every statement the shown (label, line) pairs make, as `Said`s in the order they were shown."""
    out: list[Said] = []
    for i, (label, line) in enumerate(shown):
        day = day_of(dates.get(label))
        spoken = split_speaker(_NOTE.sub("", _SUPERSEDED.sub("", line)))
        if spoken.speaker is not None:  # a turn: "Nora <character_1>: I moved to Porto"
            read = [(s.sentence, s.statement) for s in read_turn(spoken.body, spoken.speaker, None)]
        else:  # a memory: "Nora <character_1> moved to Porto.", "Mia (<character_4>)'s favourite fruit is kiwi."
            plain = _NAMED_TAG.sub("", spoken.body)
            st = parse_statement(plain)
            read = [(plain, st)] if st is not None else []
        out += [Said(label, line, day, _order(label, day, i), sentence, st) for sentence, st in read]
    return out


def changes(shown: Sequence[tuple[str, str]], dates: Mapping[str, str], as_of: date | None = None
            ) -> list[Change]:
    """The slots the shown lines state more than one value of, at different times."""
    slots: dict[str, list[Said]] = {}
    for said in statements(shown, dates):
        st = said.statement
        if st.negated or not single_valued(st.slot_key):
            continue
        slots.setdefault(st.slot_key, []).append(said)
    out = []
    for slot, group in slots.items():
        group.sort(key=lambda s: s.order)
        # the turn and the fact read from it say one thing: once
        group = list({(s.day, s.sentence): s for s in reversed(group)}.values())[::-1]
        if all(_same(s.statement.value, group[0].statement.value) for s in group[1:]) \
                or len({s.order[:3] for s in group}) < 2:
            continue
        holding = holding_index([s.day for s in group], as_of)
        if holding is None:
            continue
        out.append(Change(slot, tuple(group), holding))
    return out


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def holding_index(days: Sequence[date | None], as_of: date | None) -> int | None:
    """Which of a thing's statements, oldest first, holds: the last one, or `as_of` a day the last one said by
    then (None when none was). Shared by slotted statements here and stated values (value_updates.py)."""
    if as_of is None:
        return len(days) - 1
    by_then = [i for i, day in enumerate(days) if day is not None and day <= as_of]
    return by_then[-1] if by_then else None


def _same(a: str, b: str) -> bool:
    """One value said twice: the same words, or the same numbers ("3600 seconds" = "3600 s")."""
    if _words(a) == _words(b):
        return True
    numbers = _NUMBER.findall(a)
    return bool(numbers) and numbers == _NUMBER.findall(b)


def _short(text: str) -> str:
    return text if len(text) <= SENTENCE_CHARS else text[:SENTENCE_CHARS - 1] + "…"


def change_note(found: Sequence[Change], as_of: date | None = None) -> str | None:
    """What the reader is told of the changes: each statement in time order, dated, the holding one marked."""
    if not found:
        return None
    mark = f"held on {as_of.day} {as_of:%B %Y}" if as_of else "latest, holds now"
    out = ["Said at different times about the same thing (oldest first):"]
    for change in found:
        for i, said in enumerate(change.said):
            when = f"{said.day.day} {said.day:%B %Y}" if said.day else said.label
            tail = f" ({mark})" if i == change.holding else ""
            out.append(f"- [{when}] {_short(said.sentence)}{tail}")
    return "\n".join(out)


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _mentions(answer: str, value: str) -> bool:
    """The answer holds the value as whole words ("Porto", not inside "Portugal"); a value with a number also
    written without spaces ("250 ms" = "250ms")."""
    words = _words(value)
    if not words:
        return False
    if f" {words} " in f" {_words(answer)} ":
        return True
    return any(c.isdigit() for c in words) and words.replace(" ", "") in _words(answer).replace(" ", "")


def newest_answer(answer: str, found: Sequence[Change]) -> tuple[str, str] | None:
    """(answer, what was replaced) when the answer gives an older value of a changed slot and not the one that
    holds; None otherwise."""
    for change in found:
        holding = change.value
        if _mentions(answer, holding):
            continue
        older = [s.statement.value for s in change.said if not _same(s.statement.value, holding)]
        stale = next((v for v in older if _mentions(answer, v)), None)
        if stale is None:
            continue
        pattern = re.compile(re.escape(stale), re.IGNORECASE)
        fixed = pattern.sub(holding, answer, count=1) if pattern.search(answer) else holding
        return fixed, stale
    return None
