"""Updates of a number a person states about themselves, found without a slot: "my accuracy is at 85%" (March),
"my error detection accuracy increased to 95%" (later).

Why: the slot readers (`statements.py`, `speech_statements.py`) read few of the ways people state a changed
value, so `recency.py` rarely sees a change in real chats (issue 38: BEAM knowledge-update questions 1 of 8, the
reader answering with the older of two shown values). Here, over the lines one question was shown, no model:

- a *value* is a quantity (`quantities.py`: a number with or without a unit, a fraction "4/5") in a sentence
  where the speaker speaks of their own state ("my …", "I've …", "I scored …"); a quantity after a bound or a
  target ("below 10%", "aiming for 90%", "from 10 to 30", "by 20%") is not a state and is skipped, nor is one its
  clause calls earlier ("I've scored 60% on my initial quiz", "my original estimate of 3 weeks");
- its *attribute phrase* is the content words around it in its sentence (up to `BEFORE` words before it and
  `AFTER` after, not crossing another quantity), reduced to stems (first five letters);
- a day-exact date still to come on the day it was said is a value too (a deadline, a launch: a plan that can
  move; `readings`), a day already past is not (an event that happened), nor one after "since", "from" ...;
- a value with no words of its own ("quiz score from 70% to 85%,") has the words before the value it follows;
- a value is *about the question* when its phrase shares at least `RELEVANT` stems with the question and its
  sentence states no other condition than the question names ("under 300 users" for "under 20 requests"); values of
  one speaker, of one unit family, whose "subject: attribute phrase" embeddings have a cosine of at least
  `SAME_THING_COSINE` (with the controller's text embedder; without one, phrases sharing at least `SAME_THING`
  of the shorter phrase's stems) are one thing said at different times: "my error detection accuracy, which is
  currently at 85%" and "how my error detection accuracy for flawed proofs increased to 95%"; two or more
  different values of it make a `Change`, oldest first, the last said (or the last said by the question's as-of
  day) holding; when the holding line itself gives two different values of it, order says nothing and there is
  no change.

The reader is shown each change in time order with its date and the holding one marked (as `recency.py` does for
slots), and an answer giving an older value of a change (or a `companions` value: one the older line states beside
it) and not the holding one is given the holding value (`newest_value`), unless the question asks about the past
without naming a time (`answer_checks`);
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

from m3graph.dates import find_times
from m3graph.reasoning.attribution import split_speaker
from m3graph.reasoning.durations import asks_for_duration
from m3graph.reasoning.quantities import Quantity, quantities
from m3graph.reasoning.quantities import same as _same_quantity
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
    r"(?:\b(?:below|under|above|over|less than|more than|fewer than|at least|at most|within|than|by|from|"
    r"between|per)(?:\s+(?:the|a|an|my|our|its))?\s*|[<>≤≥±]\s*)$", re.I)  # "up to 75 items": a capacity, a value
_NOT_A_DAY = re.compile(  # right before a date: when something began or a span's edge, not a day that can move
    r"\b(?:since|after|from|between|starting|started|as of|ago)(?:\s+(?:the|on))?\s*$", re.I)
_DATE_NOTE = re.compile(r"\s*\[= [^\]]*\]")  # "this week [= the week of 7 February 2024]": the reader's aid
_TARGET_AFTER = re.compile(r"^\s*(?:target|goal|budget|limit|threshold|cap|max|maximum|minimum|SLA|SLO)\b", re.I)
_FORMULA_BEFORE = re.compile(r"(?:[=+*^<>≤≥|−-]|\b[a-zA-Z])\s*$")  # "n = 1", "2^", "k+1", "F_n", "n 5"
_FORMULA_AFTER = re.compile(r"^\s*(?:[=+*^<>≤≥|−]|-\s*\d|[a-z]\b|\(|[A-Z][a-z])")  # "1 = ", "3 - 1", "500 Internal"
_NAMED_VERSION = re.compile(r"\b(?:(?-i:[A-Z][\w.+#-]*)|version|v|port|step|section|chapter|sprint|phase|level|"
                            r"problem|question|exercise|day|week|part|page|line|batch|id|no|number|first|last|next|top|"
                            r"every|each)\s*$", re.I)
_INTENDED = re.compile(
    r"\b(?:aim|aims|aiming|goal|target|targeting|want|wants|wanted|hope|hoping|plan|plans|planned|planning|try|trying|"
    r"would|could|should|will|going to|gonna|like to|need to|needs to|expect|expecting|if|whether)\b", re.I)
_EARLIER = re.compile(  # the value's own clause says it is an earlier state, not the one that holds
    r"\b(?:initial|initially|original|originally|previous|previously|prior|earlier|former|formerly|baseline|"
    r"starting|at first|at the start|to begin with)\b", re.I)
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
    # (older, holding) values of another thing the older and the holding line both state (`companions`)
    companions: tuple[tuple[Value, Value], ...] = ()

    @property
    def value(self) -> Quantity:
        return self.said[self.holding].quantity


def same(a: Quantity, b: Quantity) -> bool:
    """One value (`quantities.same`); a date said without a year is the same day of any year."""
    if a.family == "date" or b.family == "date":
        return a.family == b.family and (a.key == b.key or "*" in a.key + b.key and a.key[-5:] == b.key[-5:])
    return _same_quantity(a, b)


def readings(text: str) -> list[Quantity]:
    """`quantities.quantities` and day-exact dates ("April 5, 2024" = "5 April 2024" = "2024-04-05", family
    "date"); a date's own numbers are not quantities of their own. Relative days ("tomorrow") are left out: what
    they mean depends on the day said, which the line's own date note gives."""
    days = [s for s in find_times(text) if s.granularity == "day" and s.said_on is None and not s.approximate]
    out = [Quantity(d.text, f"date:*-{d.first:%m-%d}" if d.yearless else f"date:{d.first.isoformat()}",
                    d.first.isoformat(), "date", d.start, d.end) for d in days]
    out += [q for q in quantities(text) if not any(d.start < q.end and q.start < d.end for d in days)]
    return sorted(out, key=lambda q: q.start)


def _to_come(q: Quantity, said: date | None) -> bool:
    """A date still to come on the day it was said: a plan (a deadline, a launch) that can move. A day already
    past is an event that happened; a later line naming another day is another event, not an update."""
    if said is None:
        return False
    day = date.fromisoformat(q.number)
    if "*" in q.key:  # no year said: the year it was said in ("February 29" in a common year: not a day)
        try:
            day = day.replace(year=said.year)
        except ValueError:
            return False
    return day > said


def stems(text: str) -> frozenset[str]:
    """Content words, lowercased, cut to five letters ("detection"/"detecting" → "detec")."""
    return frozenset(w.lower()[:5] for w in _WORD.findall(text) if w.lower() not in _STOP and len(w) > 1)


def _order(label: str, day: date | None, i: int) -> tuple[date, str, int, int]:
    video, _, clip = label.rpartition("CLIP_")
    return (day or date.min, video, int(clip) if clip.isdigit() else 0, i)


def _phrase(sentence: str, q: Quantity, previous: int, following: int) -> str:
    before = [w for w in _WORD.findall(sentence[previous:q.start]) if w.lower() not in _STOP][-BEFORE:]
    rest = sentence[q.end:following]
    if q.family == "date":  # "a deadline of April 1, 2024, to complete the prototype": the comma closes the date
        rest = re.sub(r"^\s*,", "", rest)
    tail = re.split(r"[,;:()]", rest, maxsplit=1)[0]  # after it: its own clause only
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


def stated(sentence: str, q: Quantity, day: date | None) -> bool:
    """Whether a quantity of a sentence is a value its speaker has: not a bound, a target, a delta, a formula's
    or a name's number, nor one its clause calls earlier ("60% on my initial quiz", "my original estimate of 3
    weeks": said later, it still tells how things were, so it must not become the value that holds); a date only
    when still to come on the day said (`day`) and not a span's edge."""
    lead = sentence[:q.start]
    if q.family == "date":
        return not _NOT_A_DAY.search(lead) and _to_come(q, day)
    near = " ".join(re.split(r"[,;:(]", lead)[-1].split()[-INTENT_WORDS:])
    tail = " ".join(re.split(r"[,;:()]", sentence[q.end:], maxsplit=1)[0].split()[:AFTER])
    return not (_NOT_A_STATE.search(lead) or _TARGET_AFTER.search(sentence[q.end:]) or _INTENDED.search(near)
                or _EARLIER.search(near) or _EARLIER.search(tail) or _not_an_amount(sentence, q))


def values(shown: Sequence[tuple[str, str]], dates: Mapping[str, str]) -> list[Value]:
    """Every value a speaker states about themselves in the shown (label, line) pairs, in the order shown."""
    out: list[Value] = []
    for i, (label, line) in enumerate(shown):
        spoken = split_speaker(line)
        if spoken.speaker is None:
            continue
        day = day_of(dates.get(label))
        for sentence in _SENTENCE.split(_DATE_NOTE.sub("", spoken.body)):
            if not _OWN_STATE.search(sentence):
                continue
            found = readings(sentence)
            for k, q in enumerate(found):
                if not stated(sentence, q, day):
                    continue
                previous = found[k - 1].end if k else 0
                following = found[k + 1].start if k + 1 < len(found) else len(sentence)
                words = _phrase(sentence, q, previous, following)
                back = k  # "score from 70% to 85%,": a value with no words of its own has those before the last
                while not stems(words) and back and not stems(sentence[found[back - 1].end:found[back].start]):
                    back -= 1
                    words = _phrase(sentence, q, found[back - 1].end if back else 0, following)
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


def _conditions(text: str) -> list[tuple[Quantity, frozenset[str]]]:
    """The numbers a text states with the words that follow them ("under 20 concurrent requests" → 20,
    {concu, reque}): the condition a question asks a value under."""
    out = []
    for q in quantities(text):
        after = [w for w in _WORD.findall(text[q.end:q.end + 60]) if w.lower() not in _STOP][:2]
        if after:
            out.append((q, stems(" ".join(after))))
    return out


def _other_condition(v: Value, asked: Sequence[tuple[Quantity, frozenset[str]]]) -> bool:
    """The value was stated under another condition than the question's: its sentence names a different number
    of the same thing ("under 300 concurrent users" when the question asks "under 20 concurrent requests")."""
    if not asked:
        return False
    for q, words in _conditions(v.sentence):
        if q.start == v.quantity.start:
            continue
        for want, kind in asked:
            if words & kind and not same(q, want):
                return True
    return False


def changes(question: str, shown: Sequence[tuple[str, str]], dates: Mapping[str, str],
            as_of: date | None = None, embed: Embed | None = None) -> list[Change]:
    """The things the question is about whose stated value changed over the shown lines, most relevant first."""
    asked = stems(question)
    every = values(shown, dates)
    if asks_for_duration(question):  # the time between two days: both days are asked for, neither is stale
        every = [v for v in every if v.quantity.family != "date"]
    conditions = _conditions(question)
    relevant = [v for v in every if len(v.phrase & asked) >= RELEVANT and not _other_condition(v, conditions)]
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
        out.append(Change(tuple(group), holding, max(len(v.phrase & asked) for v in group),
                          companions(group, holding, every)))
    return sorted(out, key=lambda c: -c.relevance)


def companions(group: Sequence[Value], holding: int, every: Sequence[Value]) -> tuple[tuple[Value, Value], ...]:
    """Values of another thing that changed with this one: a line giving an older value of it and the holding
    line each state one other value of one unit family ("I've been studying for 5 hours and my quiz score went
    to 85%", then "I extended my study time to 6 hours, my score increased to 90%"): a person restating a
    changed value restates what goes with it, so the older line's value of that family is the older one."""
    last = group[holding]
    own = {v.order for v in group}
    pairs: list[tuple[Value, Value]] = []
    for v in group[:holding]:
        if v.order == last.order or same(v.quantity, last.quantity):
            continue
        for old in (w for w in every if w.order == v.order and w.order != last.order and w not in group):
            new = [w for w in every if w.order == last.order and w.quantity.family == old.quantity.family
                   and not any(same(w.quantity, g.quantity) for g in group if g.order in own)]
            if len(new) == 1 and not same(old.quantity, new[0].quantity):
                pairs.append((old, new[0]))
    return tuple(pairs)


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
    """(answer, the older values replaced) when the answer gives an older value of a change and not the one that
    holds, or an older line's companion value (`companions`) and not the holding line's; None otherwise. Every
    change is looked at, the most relevant first: a question may ask for two things ("how many hours, and what
    score"), each a value that changed."""
    fixed, replaced = answer, []
    for n, change in enumerate(found):
        pairs = [(v.quantity, change.value) for v in change.said if not same(v.quantity, change.value)]
        pairs += [(old.quantity, new.quantity) for old, new in change.companions]
        for older, holding in pairs:
            given = readings(fixed)
            if any(same(holding, g) for g in given):
                continue
            # past the most relevant change a bare "5" is not taken for its "5 hours": the unit must agree
            stale = [g for g in given if same(g, older) and (n == 0 or g.family == older.family)]
            for g in reversed(stale):  # "April 1, 2024 [= 1 April 2024]": each writing of it
                fixed = fixed[:g.start] + holding.text + fixed[g.end:]
            if stale:
                replaced.append(stale[0].text)
    if not replaced:
        return None
    return fixed, ", ".join(dict.fromkeys(replaced))


def unanswered(answer: str | None, found: Sequence[Change]) -> str | None:
    """The holding value of the most relevant change when the reader's answer says nothing at all (no letter, no
    digit: a small reader sometimes replies `{"answer": ", "}`); None when it said something or nothing changed."""
    if not found or (answer is not None and re.search(r"[^\W_]", answer)):
        return None
    return found[0].value.text
