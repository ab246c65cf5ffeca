"""Updates of a number a person states about themselves, found without a slot: "my accuracy is at 85%" (March),
"my error detection accuracy increased to 95%" (later).

Why: the slot readers (`statements.py`, `speech_statements.py`) read few of the ways people state a changed
value, so `recency.py` rarely sees a change in real chats (issue 38: BEAM knowledge-update questions 1 of 8, the
reader answering with the older of two shown values). Here, over the lines one question was shown, no model:

- a *value* is a quantity (`quantities.py`: a number with or without a unit, a fraction "4/5") in a sentence
  where the speaker speaks of their own state ("my …", "I've …", "I scored …"); a quantity after a bound or a
  target ("below 10%", "aiming for 90%", "from 10 to 30", "by 20%") is not a state and is skipped;
- its *attribute phrase* is the content words around it in its sentence (up to `BEFORE` words before it and
  `AFTER` after, not crossing another quantity), reduced to stems (first five letters);
- a value is *about the question* when its phrase shares at least `RELEVANT` stems with the question; values of
  one speaker, of one unit family, whose "subject: attribute phrase" embeddings have a cosine of at least
  `SAME_THING_COSINE` (with the controller's text embedder; without one, phrases sharing at least `SAME_THING`
  of the shorter phrase's stems) are one thing said at different times: "my error detection accuracy, which is
  currently at 85%" and "how my error detection accuracy for flawed proofs increased to 95%"; two or more
  different values of it make a `Change`, oldest first, the last said (or the last said by the question's as-of
  day) holding; when the holding line itself gives two different values of it, order says nothing and there is
  no change.

The reader is shown each change in time order with its date and the holding one marked (as `recency.py` does for
slots), and an answer giving an older value of the most relevant change and not the holding one is given the
holding value (`newest_value`), unless the question asks about the past without naming a time (`answer_checks`);
an answer with no word or number in it is given the holding value of the most relevant change (`unanswered`).
Lines of one session share a day: their order is the order they were shown in (a clip's lines in the order said).
The thresholds were set looking at BEAM chats 4 and 7 only (docs/facts.md gives the held-out figures).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import numpy as np

from m3graph.reasoning.attribution import split_speaker
from m3graph.reasoning.quantities import Quantity, quantities, same
from m3graph.reasoning.recency import day_of, holding_index

BEFORE = 7  # content words of the attribute phrase before the value
AFTER = 5  # and after it
RELEVANT = 2  # stems a value's phrase must share with the question
SAME_THING = 0.5  # share of the shorter phrase's stems two values of one thing share (no embedder)
SAME_THING_COSINE = 0.85  # cosine of two values' "subject: phrase" embeddings of one thing (chosen on dev pairs)
INTENT_WORDS = 5  # a target word this close before a value makes it a target ("aiming to reach 90%")
SHOWN_CHANGES = 2  # changes the reader is told of per question, the most relevant first
QUOTE_CHARS = 160

_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z])|\n+")
_OWN_STATE = re.compile(
    r"\b(?:(?i:my)|I'(?:m|ve)|I (?:am|have|had|got|was|now|currently|just|recently|finally|scored|completed|achieved|"
    r"reached|managed|finished|set|changed|increased|decreased|reduced|improved|raised|lowered|bumped|updated|"
    r"tuned|measured|ran|did|studied|spent|solved|reviewed|passed|made|earned|hit))\b")
_NOT_A_STATE = re.compile(  # right before the value: a bound, a target, a delta or the value it changed from
    r"(?:\b(?:below|under|above|over|less than|more than|fewer than|at least|at most|up to|within|than|by|from|"
    r"between|per)(?:\s+(?:the|a|an|my|our|its))?\s*|[<>≤≥±]\s*)$", re.I)
_TARGET_AFTER = re.compile(r"^\s*(?:target|goal|budget|limit|threshold|cap|max|maximum|minimum|SLA|SLO)\b", re.I)
_FORMULA_BEFORE = re.compile(r"(?:[=+*^<>≤≥|−-]|\b[a-zA-Z])\s*$")  # "n = 1", "2^", "k+1", "F_n", "n 5"
_FORMULA_AFTER = re.compile(r"^\s*(?:[=+*^<>≤≥|−]|-\s*\d|[a-z]\b|\(|[A-Z][a-z])")  # "1 = ", "3 - 1", "500 Internal"
_NAMED_VERSION = re.compile(r"\b(?:(?-i:[A-Z][\w.+#-]*)|version|v|port|step|section|chapter|sprint|phase|level|"
                            r"problem|question|exercise|day|week|part|page|line|batch|id|no|number|first|last|next|top|"
                            r"every|each)\s*$", re.I)
_INTENDED = re.compile(
    r"\b(?:aim|aims|aiming|goal|target|targeting|want|wants|wanted|hope|hoping|plan|plans|planned|planning|try|trying|"
    r"would|could|should|will|going to|gonna|like to|need to|needs to|expect|expecting|if|whether)\b", re.I)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_STOP = frozenset((  # noqa: SIM905
    "a an the of to in on at for and or but is are was were be been being with by from as that this these those "
    "it its you your i my me we our they their he she his her do does did have has had not no any all some there "
    "which what when how than then so if into over under after before up down out can could would will may might "
    "must should i'm i've i'd now currently current recently recent latest most just so far also still am get got "
    "many much been really very about around me myself"
).split())
_YEAR = re.compile(r"^(?:19|20)\d\d$")
Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> unit-norm rows (`TextEmbedder.embed`)


@dataclass(frozen=True)
class Value:
    """One value a speaker stated about themselves in one shown line."""

    label: str
    day: date | None
    order: tuple[date, str, int, int]  # day, source, clip, place among the shown lines
    speaker: str
    sentence: str
    quantity: Quantity
    phrase: frozenset[str]  # stems of the attribute phrase
    words: str = ""  # the attribute phrase's content words, in order (what an embedding compares)

    @property
    def described(self) -> str:
        """The subject and the attribute phrase: what two values of one thing share."""
        return f"{self.speaker}: {self.words}"


@dataclass(frozen=True)
class Change:
    """Values of one thing said at different times, oldest first; `holding` indexes the one that holds."""

    said: tuple[Value, ...]
    holding: int
    relevance: int  # stems the values' phrases share with the question, at most

    @property
    def value(self) -> Quantity:
        return self.said[self.holding].quantity


def stems(text: str) -> frozenset[str]:
    """Content words, lowercased, cut to five letters ("detection"/"detecting" → "detec")."""
    return frozenset(w.lower()[:5] for w in _WORD.findall(text) if w.lower() not in _STOP and len(w) > 1)


def _order(label: str, day: date | None, i: int) -> tuple[date, str, int, int]:
    video, _, clip = label.rpartition("CLIP_")
    return (day or date.min, video, int(clip) if clip.isdigit() else 0, i)


def _phrase(sentence: str, q: Quantity, previous: int, following: int) -> str:
    before = [w for w in _WORD.findall(sentence[previous:q.start]) if w.lower() not in _STOP][-BEFORE:]
    tail = re.split(r"[,;:()]", sentence[q.end:following], maxsplit=1)[0]  # after it: its own clause only
    after = [w for w in _WORD.findall(tail) if w.lower() not in _STOP][:AFTER]
    return " ".join(before + after)


def _not_an_amount(sentence: str, q: Quantity) -> bool:
    """A number in a formula ("n = 1", "2^n"), a name's number ("Python 3.10", "port 5000", "Sprint 2", "problem
    3") or a year: not an amount a person has."""
    lead, rest = sentence[:q.start], sentence[q.end:]
    if q.family not in ("", "fraction"):
        return bool(_FORMULA_BEFORE.search(lead) and not re.search(r"\b(?:a|A|I)\s*$", lead)
                    or _FORMULA_AFTER.search(rest))
    return bool(_FORMULA_BEFORE.search(lead) and not re.search(r"\b(?:a|A|I)\s*$", lead)
                or _FORMULA_AFTER.search(rest) or _NAMED_VERSION.search(lead)
                or (q.family == "" and _YEAR.match(q.number)))


def values(shown: Sequence[tuple[str, str]], dates: Mapping[str, str]) -> list[Value]:
    """Every value a speaker states about themselves in the shown (label, line) pairs, in the order shown."""
    out: list[Value] = []
    for i, (label, line) in enumerate(shown):
        spoken = split_speaker(line)
        if spoken.speaker is None:
            continue
        day = day_of(dates.get(label))
        for sentence in _SENTENCE.split(spoken.body):
            if not _OWN_STATE.search(sentence):
                continue
            found = quantities(sentence)
            for k, q in enumerate(found):
                lead = sentence[:q.start]
                near = " ".join(re.split(r"[,;:(]", lead)[-1].split()[-INTENT_WORDS:])
                if _NOT_A_STATE.search(lead) or _TARGET_AFTER.search(sentence[q.end:]) or _INTENDED.search(near) \
                        or _not_an_amount(sentence, q):
                    continue
                previous = found[k - 1].end if k else 0
                following = found[k + 1].start if k + 1 < len(found) else len(sentence)
                words = _phrase(sentence, q, previous, following)
                if stems(words):
                    out.append(Value(label, day, _order(label, day, i), spoken.speaker, sentence, q, stems(words),
                                     words))
    return out


def overlap(a: Value, b: Value) -> float:
    """The share of the shorter attribute phrase's stems the other holds."""
    return len(a.phrase & b.phrase) / min(len(a.phrase), len(b.phrase)) if a.phrase and b.phrase else 0.0


def similarity(relevant: Sequence[Value], embed: Embed | None) -> Callable[[Value, Value], bool]:
    """Whether two values are of one thing: their "subject: attribute phrase" embeddings' cosine at least
    `SAME_THING_COSINE` when an embedder is given, else `overlap` at least `SAME_THING`."""
    if embed is None or not relevant:
        return lambda a, b: overlap(a, b) >= SAME_THING
    texts = list(dict.fromkeys(v.described for v in relevant))
    vectors = dict(zip(texts, embed(texts), strict=True))
    return lambda a, b: float(vectors[a.described] @ vectors[b.described]) >= SAME_THING_COSINE


def changes(question: str, shown: Sequence[tuple[str, str]], dates: Mapping[str, str],
            as_of: date | None = None, embed: Embed | None = None) -> list[Change]:
    """The things the question is about whose stated value changed over the shown lines, most relevant first."""
    asked = stems(question)
    relevant = [v for v in values(shown, dates) if len(v.phrase & asked) >= RELEVANT]
    alike = similarity(relevant, embed)
    groups: list[list[Value]] = []
    for v in sorted(relevant, key=lambda v: v.order):
        family = v.quantity.family
        home = next((g for g in groups if g[0].speaker == v.speaker and g[0].quantity.family == family
                     and any(alike(v, w) for w in g)), None)
        if home is None:
            groups.append([v])
        else:
            home.append(v)
    out = []
    for group in groups:
        if len({v.order for v in group}) < 2 or all(same(v.quantity, group[0].quantity) for v in group[1:]):
            continue
        holding = holding_index([v.day for v in group], as_of)
        if holding is None:
            continue
        last = group[holding]
        if any(v.order == last.order and not same(v.quantity, last.quantity) for v in group):
            continue  # the holding line itself gives two values of it: which one holds is not said by order
        out.append(Change(tuple(group), holding, max(len(v.phrase & asked) for v in group)))
    return sorted(out, key=lambda c: -c.relevance)


def _quote(v: Value) -> str:
    """The sentence around the value, at most `QUOTE_CHARS` characters."""
    s, q = v.sentence, v.quantity
    if len(s) <= QUOTE_CHARS:
        return s
    start = max(0, min(q.start - 100, len(s) - QUOTE_CHARS))
    text = s[start:start + QUOTE_CHARS]
    return ("…" if start else "") + text + ("…" if start + QUOTE_CHARS < len(s) else "")


def change_note(found: Sequence[Change], as_of: date | None = None) -> str | None:
    """What the reader is told: each change's values in time order, dated, the holding one marked."""
    if not found:
        return None
    mark = f"held on {as_of.day} {as_of:%B %Y}" if as_of else "later, holds now"
    out = ["A value stated at different times (oldest first):"]
    for change in found[:SHOWN_CHANGES]:
        for i, v in enumerate(change.said):
            when = f"{v.day.day} {v.day:%B %Y}" if v.day else v.label
            tail = f" ({mark}: {v.quantity.text})" if i == change.holding else f" ({v.quantity.text})"
            out.append(f"- [{when}] {v.speaker}: {_quote(v)}{tail}")
    return "\n".join(out)


def newest_value(answer: str, found: Sequence[Change]) -> tuple[str, str] | None:
    """(answer, the older value replaced) when the answer gives an older value of the most relevant change and
    not the one that holds; None otherwise."""
    if not found:
        return None
    change = found[0]
    holding = change.value
    given = quantities(answer)
    if any(same(holding, g) for g in given):
        return None
    older = [v.quantity for v in change.said if not same(v.quantity, holding)]
    stale = next((g for g in given if any(same(g, o) for o in older)), None)
    if stale is None:
        return None
    return answer[:stale.start] + holding.text + answer[stale.end:], stale.text


def unanswered(answer: str | None, found: Sequence[Change]) -> str | None:
    """The holding value of the most relevant change when the reader's answer says nothing at all (no letter, no
    digit: a small reader sometimes replies `{"answer": ", "}`); None when it said something or nothing changed."""
    if not found or (answer is not None and re.search(r"[^\W_]", answer)):
        return None
    return found[0].value.text
