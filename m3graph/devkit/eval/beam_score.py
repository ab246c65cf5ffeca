"""Scoring BEAM answers without a model: the checks the BEAM development set's README asks for, and a rubric.

Why deterministic: a judge model on two shared CPU cores costs more than the answers, and a 1.5B judge is not
a reliable one; these checks are what the README names where one fits, and they are the same every run.

Rubric items ("LLM response should mention: 200MB of memory usage") are read as *nuggets*: the prefix up to the
colon goes, and a nugget is found in an answer when every value it holds that the question does not already give
is in the answer (as numbers with their units, `reasoning/quantities.py`: "15,000" = "15000", "200MB" = "200 MB" =
"200 megabytes", "180ms" = "0.18 s", "5 out of 5" = "5/5" or both its numbers; a bare number matches a number with
a unit) and, when it holds no such value, when at least half of its content words not in the question
(lowercased, plural "s" dropped, stop words out) are; a nugget holding a negation (never, not, n't ...) needs
one in the answer too ("you have never customized X" is not named by "you have customized X"). The rubric score
of an answer is the share of its question's nuggets found (the paper's nugget judge, word overlap for the model).

The check per category (`correct`):
- knowledge_update: every nugget holding a number is found (all nuggets when none holds one), or the gold answer's
  own values (those the question does not give) are all in the answer: a short gold answer ("180ms") is met by
  "180 ms" or "180 milliseconds" however the rubric words it; and no *stale* number is in the answer. Stale
  numbers are those the item's `potential_confusion` names (the old value: "the
  original 150MB ... 10,000 keys") that neither the gold answer nor the question holds.
- contradiction_resolution: the answer says the statements conflict (contradict, conflict, inconsistent, "which
  is correct", clarify ...), or it names both statements (the rubric's two "mention" nuggets found).
- temporal_reasoning: the first nugget's computed span ("13 days": a number with a unit of time) is in the answer
  (its numbers when it names no span); a count in words is its number ("roughly two weeks" = "2 weeks").
- event_ordering: the share of the rubric's items found in the answer *in order* (the longest run of found
  items whose positions in the answer increase, over all items); correct at one half or more.
Other categories get the rubric score only (correct when every nugget is found).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from m3graph.reasoning.quantities import Quantity, holds, quantities

CATEGORIES = ("knowledge_update", "contradiction_resolution", "temporal_reasoning", "event_ordering")  # the default
ALL_CATEGORIES = (*CATEGORIES, "abstention", "information_extraction", "instruction_following",
                  "multi_session_reasoning", "preference_following", "summarization")
_PREFIX = re.compile(r"^\s*(?:LLM response should|The response should|Response should)[^:]{0,40}:\s*", re.I)
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\d])")
_WORD = re.compile(r"[a-z][a-z0-9+#.-]*[a-z0-9+#]|[a-z]")
_STOP = frozenset((  # noqa: SIM905
    "a an the of to in on at for and or but is are was were be been being with by from as that this "
    "these those it its you your i my me we our they their he she his her should mention state "
    "about also having have has had not no do does did any all some there which what when how than "
    "then so if into over under after before between up down out can could would will may might "
    "must"
).split())
_NEGATION = re.compile(r"\b(?:never|not|no|none|n't|don't|didn't|haven't|hasn't|without)\b|n't\b", re.I)
_COUNT_WORDS = {w: str(i) for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                                                 "nine", "ten", "eleven", "twelve"))} | {"an": "1", "a": "1"}
_SPAN = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?|" + "|".join(_COUNT_WORDS) + r")\s*"
                   r"(minutes?|hours?|days?|weeks?|months?|years?)\b", re.I)
_CONFLICT = re.compile(
    r"\b(?:contradict\w*|conflict\w*|inconsisten\w*|discrepan\w*|clarif\w*|mixed (?:information|statements)|"
    r"two different (?:statements|answers|things)|not consistent|which (?:one |of these |statement |of them )?"
    r"(?:is|was) (?:correct|right|true|accurate))\b", re.I)


def nuggets(rubric: Sequence[str]) -> list[str]:
    """The rubric's items without their "LLM response should mention:" prefix."""
    return [_PREFIX.sub("", item).strip() for item in rubric if _PREFIX.sub("", item).strip()]


def numbers(text: str) -> set[str]:
    """The numbers a text holds, as canonical strings ("15,000" → "15000", "1.50" → "1.5")."""
    out = set()
    for raw in _NUMBER.findall(text):
        value = raw.replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        out.add(value.lstrip("0") or "0")
    return out


def words(text: str) -> set[str]:
    """Content words, lowercased, a plural "s" dropped."""
    out = set()
    for w in _WORD.findall(text.lower()):
        if w in _STOP or w.isdigit():
            continue
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


def wanted_values(text: str, question: str = "") -> list[Quantity]:
    """The values a text (a nugget, a gold answer) names that the question does not already give."""
    return [q for q in quantities(text) if not holds(question, q)]


def held(answer: str, value: Quantity) -> bool:
    """The answer gives the value: as a number with its unit (`quantities.holds`), and a fraction also as its two
    numbers ("7 problems with 6 correct" gives "6 out of 7")."""
    if holds(answer, value):
        return True
    if value.family != "fraction":
        return False
    top, bottom = value.key.removeprefix("fraction:").split("/")
    return {top, bottom} <= numbers(answer)


def found(nugget: str, answer: str, question: str = "") -> bool:
    """Whether the answer holds the nugget (see the module docstring)."""
    if _NEGATION.search(nugget) and not _NEGATION.search(answer):
        return False  # "you have never customized X" is not named by "you have customized X"
    if quantities(nugget):
        wanted = wanted_values(nugget, question)
        if wanted:
            return all(held(answer, q) for q in wanted)
    content = words(nugget) - words(question)  # what the question says, an answer need not repeat
    return bool(content) and 2 * len(content & words(answer)) >= len(content)


def _count(text: str) -> str:
    """A span's count as a canonical number: "2" and "two" are one count ("roughly two weeks" = "2 weeks")."""
    return _COUNT_WORDS.get(text.lower()) or numbers(text).pop()


def span_found(nugget: str, answer: str) -> bool:
    """A temporal item's computed span ("13 days", "2 weeks", "two weeks") in the answer; all its numbers when it
    names none."""
    span = _SPAN.search(nugget)
    if span is None:
        return found(nugget, answer)
    unit = span.group(2).lower().rstrip("s")
    return any(n == _count(span.group(1)) and u.lower().rstrip("s") == unit
               for n, u in ((_count(m.group(1)), m.group(2)) for m in _SPAN.finditer(answer)))


def rubric_score(rubric: Sequence[str], answer: str, question: str = "") -> float:
    items = nuggets(rubric)
    return sum(found(n, answer, question) for n in items) / len(items) if items else 0.0


def in_order(items: Sequence[str], answer: str) -> float:
    """The share of items found in the answer in order: the longest increasing run of their first positions."""
    if not items:
        return 0.0
    low = answer.lower()
    positions = []
    for item in items:
        content = words(item)
        hits = [m.start() for w in content for m in re.finditer(re.escape(w), low)]
        if content and 2 * len({w for w in content if w in low}) >= len(content):
            positions.append(min(hits))
    best: list[int] = []  # patience sorting: the longest strictly increasing subsequence's length
    for p in positions:
        i = next((j for j, b in enumerate(best) if b >= p), len(best))
        best[i:i + 1] = [p]
    return len(best) / len(items)


@dataclass(frozen=True)
class Score:
    correct: bool
    rubric: float  # share of nuggets found
    detail: str  # why, for the results file


def score(category: str, question: str, rubric: Sequence[str], answer: str, gold: str = "",
          confusion: str = "") -> Score:
    """The deterministic check of one answer (module docstring)."""
    items = nuggets(rubric)
    rub = rubric_score(rubric, answer, question)
    if category == "knowledge_update":
        numeric = [n for n in items if numbers(n)] or items
        missing = [n for n in numeric if not found(n, answer, question)]
        stale = sorted((numbers(confusion) - numbers(gold) - numbers(question)) & numbers(answer))
        short = wanted_values(gold, question)
        if missing and short and all(held(answer, q) for q in short):
            missing = []  # the gold answer's own values are all there ("180 ms" for gold "180ms")
        detail = "; ".join([*(f"missing {n!r}" for n in missing), *(f"stale {s}" for s in stale)]) or "ok"
        return Score(not missing and not stale, rub, detail)
    if category == "contradiction_resolution":
        flagged = _CONFLICT.search(answer)
        mentions = [n for r, n in zip(rubric, items, strict=False) if "mention" in r.lower()]
        both = len(mentions) >= 2 and all(found(n, answer) for n in mentions[:2])
        ok = bool(flagged) or both
        return Score(ok, rub, f"conflict flagged ({flagged.group(0)!r})" if flagged else
                     "both statements named" if both else "neither flagged nor both named")
    if category == "temporal_reasoning":
        ok = bool(items) and span_found(items[0], answer)
        return Score(ok, rub, "ok" if ok else f"missing {items[0]!r}" if items else "no rubric")
    if category == "event_ordering":
        share = in_order(items, answer)
        return Score(share >= 0.5, share, f"{share:.0%} of items in order")
    return Score(bool(items) and rub == 1.0, rub, f"{rub:.0%} of rubric items")
