"""The memory's own statement of what the question asks wins over what the reader already knows (issue 38).

Why: the 1.5B reader, shown "quarterback is associated with the sport of Muay Thai.", answered "Which sport is
quarterback associated with?" with "association football", and "What is the official language of Japan?" with
"Japanese" beside "The official language of Japan is Swedish.": it answers from what it learnt, not from the memory
(FactConsolidation's single-hop misses, docs/facts.md). A memory is worth asking because it knows what the reader
does not, so where a shown line states exactly what the question asks, its value is the answer.

The rule, model-free (`m3graph.statements.parse_statement` reads the lines; nothing here reads the question with a
model or a template list):
- a shown line is a single-valued statement (subject, attribute, value), not negated;
- the question names its subject as a phrase, and every content word of its attribute ("associated", "sport";
  stems, "lives" = "live"; or of the parser's name for it, "married to" = "spouse"), and no other content word
  (beside "name", "current", "now" and the like): a question with words left over asks a further hop ("the
  spouse of the author of ...") or something else;
- the question does not name its value (then the value is not what is asked: "Is Tim Cook the CEO of Apple?");
- all such lines agree on one value, and the question is not a yes/no question;
- the value is not itself the subject of another shown statement whose attribute the question also names: there
  the chain goes on ("Which sport is associated with the position Robert Parish plays?" stops at neither
  "quarterback" nor the first hop; the multi-hop step, `fact_chain.py`, owns chains).
An answer that already holds the value (either contains the other, after normalising) stands.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from m3graph.statements import Statement, normalise_name, parse_statement

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_YES_NO = re.compile(r"^\s*(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should)\b", re.I)
_MARK = re.compile(r"\s*\((?:latest|held|superseded|later|said)[^)]*\)\s*$")  # the marks the controller adds
_FILLER = frozenset({"name", "current", "currently", "now", "called", "known", "today"})
_STOP = frozenset(_WORD.findall(
    "a an the of to in on at for by with from as is are was were be been being has have had do does did "
    "which what who whom whose where when how that this it its there their his her"))


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _content(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def _names(phrase: str, text: str) -> bool:
    """Whether `text` holds the normalised `phrase` as whole words."""
    return bool(phrase) and re.search(rf"(?<![\w]){re.escape(phrase)}(?![\w])", text) is not None


@dataclass(frozen=True)
class Stated:
    """The value the memory states for what the question asks, and the line stating it."""

    value: str
    line: str


def _statements(lines: Sequence[str]) -> list[tuple[str, Statement]]:
    out = []
    for line in lines:
        st = parse_statement(_MARK.sub("", line))
        if st is not None and st.functional and not st.negated:
            out.append((line, st))
    return out


def stated_value(question: str, lines: Sequence[str]) -> Stated | None:
    """The value the shown lines state for exactly what the question asks (module docstring), or None."""
    if _YES_NO.match(question):
        return None
    asked = normalise_name(question)
    words = _content(question)
    parsed = _statements(lines)

    def attribute_words(st: Statement) -> set[str]:
        return _content(st.attribute) | _content(st.attribute_key)  # "married to" is also "spouse"

    def names_attribute(st: Statement) -> bool:
        return any(want and want <= words for want in (_content(st.attribute), _content(st.attribute_key)))

    def explains(st: Statement) -> bool:  # no word of the question left for a further hop
        return words <= _content(st.subject) | attribute_words(st) | _FILLER

    found = [(line, st) for line, st in parsed
             if _names(st.subject_key, asked) and names_attribute(st) and explains(st)
             and not _names(st.value_key, asked)]
    if not found or len({st.value_key for _, st in found}) != 1:
        return None
    line, st = found[0]
    if any(other.subject_key == st.value_key and names_attribute(other) for _, other in parsed):
        return None  # the value is the next hop of a chain the question names
    return Stated(st.value, line)


def holds(answer: str, value: str) -> bool:
    """Whether the answer already gives the value (one contains the other, normalised)."""
    a, v = normalise_name(answer), normalise_name(value)
    return bool(a) and bool(v) and (_names(v, a) or _names(a, v))
