"""A when-answer checked against the lines it was read from: a time the reader copied in words becomes the date
the line resolved it to.

Why: the reader sees every time expression with its resolution ("Yesterday [= 20 June 2023] I went to
networking events"), yet a 1.5B reader still answers "Yesterday", or "Last Sunday [30 July 2023]", or "Last week
(the week of 31 July 2023)": words that are true only on the day they were said. The line the answer rests on
holds the resolution, so the answer is checked against it: every relative expression in the answer that the
shown lines resolve one way is replaced by that resolution, and the reader's own copy of the note is dropped.
An expression the lines resolve two ways is left as the reader wrote it unless one line, by the question's
words, is the one the answer rests on.

The other slip is the day a line was *said* given as the day it happened: each line is shown after its session's
date ("[20 January 2023] Jon: Lost my job as a banker yesterday [= 19 January 2023]"), and the reader copies the
first date. An answer that is one day, found in no line but as a session's date, where the line of that session
the question's words point to resolves one time of its own, becomes that line's resolution.

The third is a time read from the wrong line: shown a session, the reader gives the date another of its lines
resolved. An answer whose one time the line the question's words point to (alone, by at least two words) does
not tell becomes that line's time (`_pointed_line`); an answer that only repeats the question's own month is
checked the same way against the lines telling of a shorter time inside it. No model: every check is a string
match against what was shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from m3graph.dates import TimeSpan, find_times

# A question that asks for a time ("When did ...", "What date ...", "In which month ..."); durations are
# computed elsewhere (`durations`).
_ASKS_WHEN = re.compile(r"^\W*(?:(?:and|so|then)\s+)?(?:when\b|(?:in\s+|on\s+|during\s+)?(?:what|which)\s+"
                        r"(?:date|day|year|month|week|weekend|time|season)\b)", re.IGNORECASE)
_NOTE = re.compile(r" \[= ([^\]]{1,200})\]")
# What a reader writes right after copying a relative expression: the note in brackets or parentheses.
_COPIED_NOTE = re.compile(r"\s*[\[(]\s*(?:=\s*)?[^\])]{0,200}[\])]")
_ANY_DAY = date(2000, 1, 3)  # relative expressions are found against any reference: only their words matter here
_WORD = re.compile(r"[a-z0-9]+")  # words of a question and a line, lowercased
_STOP = frozenset({"a", "an", "the", "of", "to", "in", "on", "at", "for", "and", "or", "did", "does", "do", "was",
                   "were", "is", "are", "has", "have", "had", "when", "what", "which", "her", "his", "their", "my",
                   "your", "its", "with", "from", "by", "about"})


@dataclass(frozen=True)
class Grounded:
    """The answer as grounded, and what was replaced by what (for the round's note)."""

    answer: str
    replaced: tuple[tuple[str, str], ...]
    said_day: bool = False  # the answer was the day its line was said, replaced by the day the line tells of
    pointed: str = ""  # the start of the line the question's words point to, whose time replaced the answer's

    def note(self, answer: str) -> str:
        """What the round's note says was changed."""
        if self.pointed:
            return (f"the reader's {answer!r} is not the time of the line the question points to "
                    f"({self.pointed!r}); that line tells of {self.answer!r}")
        if self.said_day:
            return (f"the reader's {answer!r} is the day its line was said; the line tells of {self.answer!r}, "
                    "as shown")
        said = ", ".join(f"{a!r} as {b!r}" for a, b in self.replaced)
        return f"the reader's {answer!r} with {said}, as the shown lines resolve it"


def asks_when(question: str) -> bool:
    return bool(_ASKS_WHEN.search(question))


def _relative_spans(text: str) -> list[tuple[int, int, str]]:
    return [(s.start, s.end, s.text) for s in find_times(text, _ANY_DAY) if s.said_on is not None]


def _notes(lines: Iterable[str]) -> list[tuple[str, str, str]]:
    """(expression as said, lowercased; its resolution; the line's words) for every note in the shown lines."""
    out: list[tuple[str, str, str]] = []
    for line in lines:
        plain, pos, ends = [], 0, []
        for m in _NOTE.finditer(line):
            plain.append(line[pos:m.start()])
            ends.append((sum(map(len, plain)), m.group(1).strip()))
            pos = m.end()
        plain.append(line[pos:])
        text = "".join(plain)
        spans = _relative_spans(text)
        for end, means in ends:
            said = next((t for _, e, t in spans if e == end), None)
            if said is not None:
                out.append((" ".join(said.lower().split()), means, text.lower()))
    return out


def _stem(word: str) -> str:
    """A light English suffix strip, enough to meet "applied" with "apply" and "agencies" with "agency"."""
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + repl
    return word


def _overlap(question: str, line: str) -> int:
    """How many of the question's content words the line holds (equal, stemmed alike, or sharing five first
    letters)."""
    words = {w for w in _WORD.findall(question.lower()) if w not in _STOP and len(w) > 2}
    have = set(_WORD.findall(line))
    stems = {_stem(h) for h in have}
    return sum(1 for w in words if w in have or _stem(w) in stems
               or (len(w) > 4 and any(h.startswith(w[:5]) for h in have)))


def _resolution(question: str, said: str, notes: list[tuple[str, str, str]]) -> str | None:
    candidates = [(means, line) for s, means, line in notes if s == said]
    distinct = {m for m, _ in candidates}
    if len(distinct) == 1:
        return distinct.pop()
    if not distinct:
        return None
    ranked = sorted(((_overlap(question, line), means) for means, line in candidates), reverse=True)
    best = [m for score, m in ranked if score == ranked[0][0]]
    return best[0] if len(set(best)) == 1 and ranked[0][0] > 0 else None


def ground_time(question: str, answer: str, shown: Sequence[tuple[str, str]],
                said_on: Mapping[str, str] | None = None) -> Grounded | None:
    """The answer checked against the `shown` (clip label, line) pairs, `said_on` giving each label's session date
    as the reader saw it; None when nothing changes (or the question does not ask when).

    Each relative time expression in the answer is replaced by the resolution the shown lines give it; an answer
    holding one time, resolved so, becomes that resolution alone. An answer that is only a session's date is
    given as the date of the event its line tells (`_said_not_happened`)."""
    if not asks_when(question):
        return None
    lines = [line for _, line in shown]
    spans = _relative_spans(answer)
    if not spans:
        return (_said_not_happened(question, answer, shown, said_on or {})
                or _pointed_line(question, answer, shown, said_on or {}))
    notes = _notes(lines)
    out, pos, replaced = [], 0, []
    for start, end, said in spans:
        means = _resolution(question, " ".join(said.lower().split()), notes)
        if means is None or start < pos:
            continue
        copied = _COPIED_NOTE.match(answer, end)
        out.append(answer[pos:start] + means)
        pos = copied.end() if copied else end
        replaced.append((said, means))
    if not replaced:
        return None
    if len(replaced) == 1 and len(find_times(answer)) <= 1:
        # The question asks when, and the answer holds one time: that time is the answer ("Last week (the week
        # of 31 July 2023)", or a whole copied line "Yesterday [= 20 June 2023] I chose to go to ...").
        return Grounded(replaced[0][1], tuple(replaced))
    return Grounded(("".join(out) + answer[pos:]).strip(), tuple(replaced))


def _said_not_happened(question: str, answer: str, shown: Sequence[tuple[str, str]],
                       said_on: Mapping[str, str]) -> Grounded | None:
    times = find_times(answer)
    if len(times) != 1 or times[0].granularity != "day" or times[0].approximate:
        return None
    day = times[0].render()
    if not said_on or any(day in line for _, line in shown):
        return None  # the date is in a line (said or resolved): the reader read it there
    scored = []
    for label, line in shown:
        notes = _notes([line]) if said_on.get(label) == day else []
        if len(notes) == 1:  # a line telling of two times does not say which one the question asks
            scored.append((_overlap(question, notes[0][2]), notes[0][1]))
    if not scored:
        return None
    best = max(score for score, _ in scored)
    means = {m for score, m in scored if score == best}
    if best < 2 or len(means) != 1:
        return None  # no line of that day is clearly the one the question asks about
    resolved = means.pop()
    return Grounded(resolved, ((answer, resolved),), said_day=True) if resolved != day else None


def _plain(line: str) -> str:
    """The line without its resolution notes, lowercased: the words that were said."""
    return _NOTE.sub("", line).lower()


def _told(label: str, line: str, said_on: Mapping[str, str]) -> str | None:
    """The one time a shown line tells of: its one resolved expression, or, when it holds no time expression at
    all, the day its session was said; None for two times or a time said without a resolution ("in May")."""
    notes = _notes([line])
    if len(notes) == 1:
        return notes[0][1]
    if not notes and not find_times(_plain(line), _ANY_DAY):
        return said_on.get(label)
    return None


def _pointed_line(question: str, answer: str, shown: Sequence[tuple[str, str]],
                  said_on: Mapping[str, str]) -> Grounded | None:
    """An answer holding one time that the line the question points to does not tell becomes that line's time.

    "When did Gina mention Shia Labeouf?": the reader, shown the session where "It's Shia Labeouf!" was said,
    answered the date another line of it resolved ("Last Friday [= 21 July 2023]"). The line sharing the most of
    the question's words (at least two, and strictly more than any other shown line) is the one the answer rests
    on; its time is `_told`. An answer whose time overlaps that one is left alone (the reader may say less or
    more); so is every answer when no single line stands out.

    An answer that only repeats the time the question gives ("When did Melanie go camping in June?" "June 2023")
    says nothing; the line is then chosen among those telling of a shorter time inside it ("last week [= the week
    before 27 June 2023]").
    """
    times = find_times(answer)
    if len(times) != 1 or not said_on:
        return None
    said = times[0]
    echo = any((q.first, q.last) == (said.first, said.last) for q in find_times(question, said.first))
    scored: list[tuple[int, int, str | None, list[TimeSpan]]] = []
    for i, (label, line) in enumerate(shown):
        told = _told(label, line, said_on)
        read = find_times(told) if told else []
        if echo and (len(read) != 1 or not (said.first <= read[0].first and read[0].last <= said.last)
                     or (read[0].first, read[0].last) == (said.first, said.last)):
            continue  # the question's own time: only a line telling of a shorter time inside it answers
        scored.append((_overlap(question, _plain(line)), i, told, read))
    scored.sort(key=lambda x: (-x[0], x[1]))
    if not scored or scored[0][0] < 2 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    _, best, told, read = scored[0]
    if told is None or len(read) != 1:
        return None  # two times, or a time the line says without a resolution: no single answer
    if not echo and read[0].first <= said.last and said.first <= read[0].last:
        return None  # the answer's time and the line's overlap: the reader read that line
    return Grounded(told, ((answer, told),), pointed=shown[best][1][:60])
