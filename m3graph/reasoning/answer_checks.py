"""What the reader is told beside the evidence, and the model-free checks of its answer (issues 36 and 38).

The controller (`control.py`, tools mode) keeps one `Checks` per question:

- `notes(shown, dates)`, with each round's results: statements on one slot said at different times, in time order
  with the holding one marked (`recency.py`), and a person's denial and affirmation of the same thing
  (`contradictions.py`); each reported once, in the round whose lines first show it (the as-of point a question
  names, `as_of.py`, shows in the marks: "held on 30 April 2025"; alone it changes no prompt);
- `answer(answer, shown, dates)`, on the reader's answer: a yes/no question touching a contradiction is answered
  with both statements and the question which holds; an older value of a changed slot becomes the one that holds
  (unless the question asks about the past without naming a time); a who-question about whom something is done to,
  answered with a person, gets the role or thing the line names (`roles.py`). Returns the new answer and the note
  for the trace, or None when the answer stands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from m3graph.reasoning import contradictions, recency, roles
from m3graph.reasoning.as_of import AsOf
from m3graph.reasoning.attribution import split_speaker
from m3graph.reasoning.names import NameBook

Shown = Sequence[tuple[str, str]]  # (clip label, line) as the reader was shown them


@dataclass
class Checks:
    question: str
    as_of: AsOf | None = None
    past: bool = False  # the question asks how things were before ("used to", "before"): old values stand
    names: NameBook | None = None
    reported: set[str] = field(default_factory=set)

    def notes(self, shown: Shown, dates: Mapping[str, str]) -> str | None:
        """The notes for the round that just showed the last of `shown`; None when there is nothing new."""
        out: list[str] = []
        day = self.as_of.day if self.as_of else None
        fresh = [c for c in recency.changes(shown, dates, day) if c.slot not in self.reported]
        self.reported |= {c.slot for c in fresh}
        said = recency.change_note(fresh, day)
        if said:
            out.append(said)
        found = contradictions.touching(self.question, contradictions.conflicts(shown, dates))
        new = [c for c in found if _key(c) not in self.reported]
        self.reported |= {_key(c) for c in new}
        conflict = contradictions.conflict_note(new)
        if conflict:
            out.append(conflict)
        return "\n".join(out) or None

    def plain(self, line: str) -> str:
        """A shown line without the names put beside its tags (`names.NameBook.plain`)."""
        return self.names.plain(line) if self.names is not None else line

    def answer(self, answer: str | None, shown: Shown, dates: Mapping[str, str]) -> tuple[str, str] | None:
        """(the answer as checked, the note saying why) or None when the reader's answer stands."""
        both = contradictions.conflict_answer(self.question, answer,
                                              contradictions.conflicts(shown, dates))
        if both is not None:
            return both, f"contradiction: the reader's {answer!r} replaced by both statements"
        if answer is None:
            return None
        if not self.past or self.as_of is not None:
            day = self.as_of.day if self.as_of else None
            newest = recency.newest_answer(answer, recency.changes(shown, dates, day))
            if newest is not None:
                held = f"held on {day}" if day else "holds now"
                return newest[0], f"recency: {newest[1]!r} was said earlier; the value that {held} replaces it"
        people = [s.speaker for s in (split_speaker(line) for _, line in shown) if s.speaker]
        if self.names is not None:
            people += [n for n in self.names.known.values() if n]
        role = roles.role_answer(self.question, answer, [line for _, line in shown], people)
        if role is not None:
            return role, f"who-question about whom it is done to: the line names {role!r}, not a person"
        return None


def _key(c: contradictions.Conflict) -> str:
    return f"conflict:{c.denied.label}:{c.denied.sentence}|{c.affirmed.label}:{c.affirmed.sentence}"
