"""A half answer made whole: a bare value answered for a value that changed is given with the clause of the line
that holds it ("75" → "75 ("the new version supports up to 75 items with a 50% improvement in throughput")").

Why: a small reader asked about a value that changed often copies one number of the holding line and drops what
goes with it (issue 38, BEAM knowledge-update questions: "75" for "75 items with a 50% improvement", "7" for "7
problems with 6 correct"), where a reader of whole sentences keeps both. Model-free, after the recency check
(`value_updates.newest_value`) has made the answer the holding value where it gave an older one:

- the answer is one value (`value_updates.readings`: a number with or without a unit, a fraction, a date) and at
  most `EXTRA_WORDS` words besides;
- the most relevant change's holding line states that value, as the holding value or beside it;
- the clause of that line from the answer's value to the holding value (clauses end at "," ";" ":" and before
  "but", "so", "because") states at least one more value (`value_updates.stated`: not a bound such as "under
  1,000 users", not a name's number such as "RTX 2060"), no older value of the change, and no code.

The answer then keeps its own words and adds that clause, quoted. Nothing else changes: an answer with words of
its own, or whose value the holding clause states alone, stands as the reader gave it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from m3graph.reasoning.value_updates import Change, readings, same, stated

EXTRA_WORDS = 2  # words an answer may hold besides its value ("75 items") and still be a bare value
CLAUSE_CHARS = 200  # the longest clause quoted
_BOUNDARY = re.compile(r"[,;:]\s+|\s+(?:but|so|because)\s+")
_LEAD = re.compile(r"^(?:and|but|so|then|also|plus)\s+", re.I)
_WORD = re.compile(r"[A-Za-z]{2,}")
_CODE = re.compile(r"[=#{}<>`\[\]]|\w\(")  # a clause of code ("db=0) # Set maxmemory to 1GB"): not speech


def _clause(sentence: str, start: int, end: int) -> str:
    """The part of the sentence from the clause holding `start` to the clause holding `end`."""
    cuts = [0] + [m.end() for m in _BOUNDARY.finditer(sentence)] + [len(sentence) + 1]
    first = max(c for c in cuts if c <= start)
    last = min(c for c in cuts if c > end)
    stop = next((m.start() for m in _BOUNDARY.finditer(sentence) if m.end() == last), len(sentence))
    return _LEAD.sub("", sentence[first:stop].strip(" ,;:.")).strip()


def full_value(answer: str, found: Sequence[Change]) -> str | None:
    """The answer with the holding line's clause added when it is a bare value of that clause and the clause
    states more (module docstring); None when the answer stands."""
    if not found:
        return None
    given = readings(answer)
    if len(given) != 1:
        return None
    g = given[0]
    if len(_WORD.findall(answer[:g.start] + " " + answer[g.end:])) > EXTRA_WORDS:
        return None
    change = found[0]
    last = change.said[change.holding]
    sentence, held = last.sentence, last.quantity
    there = [q for q in readings(sentence) if same(q, g)]
    if not there:
        return None
    mine = min(there, key=lambda q: abs(q.start - held.start))
    first, last_end = min(mine.start, held.start), max(mine.end, held.end)
    clause = _clause(sentence, first, last_end - 1)
    if len(clause) > CLAUSE_CHARS or _CODE.search(clause):
        return None
    start = sentence.find(clause)
    inside = [q for q in readings(sentence) if start <= q.start and q.end <= start + len(clause)]
    older = {v.quantity.key for v in change.said if not same(v.quantity, held)}
    if len(inside) < 2 or any(q.key in older or not stated(sentence, q, last.day) for q in inside):
        return None  # nothing beside the answer's value, an older value, or a bound ("from 4 hours to 5 hours")
    return f'{answer.strip()} ("{clause}")'
