"""What the reader is told beside the evidence, and the model-free checks of its answer (issues 36 and 38).

The controller (`control.py`, tools mode) keeps one `Checks` per question:

- `notes(shown, dates)`, with each round's results: statements on one slot said at different times, in time order
  with the holding one marked (`recency.py`), a value a person stated about themselves that changed, found without
  a slot (`value_updates.py`), and a person's denial and affirmation of the same thing
  (`contradictions.py`); each reported once, in the round whose lines first show it (the as-of point a question
  names, `as_of.py`, shows in the marks: "held on 30 April 2025"; alone it changes no prompt);
- `answer(answer, shown, dates)`, on the reader's answer: a yes/no question touching a contradiction is answered
  with both statements and the question which holds; an older value of a changed slot (or of a changed value,
  `value_updates.py`, every change the question touches, and a value the older line states beside it) becomes
  the one that holds (unless the question asks about the past without naming a time), and a bare value of the
  holding line is given with the clause it was said in (`full_value.py`: "75" of "75 items with a 50%
  improvement"); an answer that is not the value a shown line states for exactly what the question asks becomes
  that value (`stated_fact.py`: the reader answered from what it knew); a who-question about whom something is
  done to, answered with a person, gets the role or thing the line names (`roles.py`); an answer with no word or
  number in it ("," from a small reader) is given the value stated last of what the question asks about, where
  one changed (`value_updates.unanswered`). Returns the new
  answer and the note for the trace, or None when the answer stands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from m3graph.reasoning import contradictions, recency, roles, value_updates
from m3graph.reasoning.as_of import AsOf
from m3graph.reasoning.attribution import split_speaker
from m3graph.reasoning.full_value import full_value
from m3graph.reasoning.names import NameBook
from m3graph.reasoning.stated_fact import holds, stated_value

Shown = Sequence[tuple[str, str]]  # (clip label, line) as the reader was shown them


@dataclass
class Checks:
    question: str
    as_of: AsOf | None = None
    past: bool = False  # the question asks how things were before ("used to", "before"): old values stand
    names: NameBook | None = None
    embed: value_updates.Embed | None = None  # the controller's text embedder: values said in other words
    reported: set[str] = field(default_factory=set)
    _vectors: dict[str, np.ndarray] = field(default_factory=dict)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """`embed`, each text once per question (every round's notes and the answer compare the same phrases)."""
        assert self.embed is not None
        new = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if new:
            self._vectors.update(zip(new, self.embed(new), strict=True))
        return np.stack([self._vectors[t] for t in texts])

    def _value_changes(self, shown: Shown, dates: Mapping[str, str], day: date | None
                       ) -> list[value_updates.Change]:
        return value_updates.changes(self.question, shown, dates, day, self._embed if self.embed else None)

    def notes(self, shown: Shown, dates: Mapping[str, str]) -> str | None:
        """The notes for the round that just showed the last of `shown`; None when there is nothing new."""
        out: list[str] = []
        day = self.as_of.day if self.as_of else None
        fresh = [c for c in recency.changes(shown, dates, day) if c.slot not in self.reported]
        self.reported |= {c.slot for c in fresh}
        said = recency.change_note(fresh, day)
        if said:
            out.append(said)
        moved = [c for c in self._value_changes(shown, dates, day) if _value_key(c) not in self.reported]
        self.reported |= {_value_key(c) for c in moved}
        stated = value_updates.change_note(moved, day)
        if stated:
            out.append(stated)
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
        if not self.past or self.as_of is not None:
            day = self.as_of.day if self.as_of else None
            if answer is not None and not any(c.isalnum() for c in answer):
                value = value_updates.unanswered(answer, self._value_changes(shown, dates, day))
                if value is not None:
                    return value, f"the reader's {answer!r} says nothing; the value stated last replaces it"
        if answer is None:
            return None
        if not self.past or self.as_of is not None:
            day = self.as_of.day if self.as_of else None
            newest = recency.newest_answer(answer, recency.changes(shown, dates, day))
            if newest is not None:
                held = f"held on {day}" if day else "holds now"
                return newest[0], f"recency: {newest[1]!r} was said earlier; the value that {held} replaces it"
            moved = self._value_changes(shown, dates, day)
            newest = value_updates.newest_value(answer, moved)
            checked = newest[0] if newest is not None else answer
            whole = full_value(checked, moved)  # a bare value of the holding line: its clause with it
            if newest is not None:
                held = f"held on {day}" if day else "holds now"
                note = f"recency: {newest[1]!r} was said earlier; the value that {held} replaces it"
                return (whole, f"{note}; the holding line's clause added") if whole else (newest[0], note)
            if whole is not None:
                return whole, f"the reader's {answer!r} is one value of the holding line: its clause added"
        stated = stated_value(self.question, [self.plain(line) for _, line in shown])
        if stated is not None and not holds(answer, stated.value):  # what the memory says, not what the reader knew
            return stated.value, f"the memory states it ({stated.line!r}): the reader's {answer!r} replaced"
        people = [s.speaker for s in (split_speaker(line) for _, line in shown) if s.speaker]
        if self.names is not None:
            people += [n for n in self.names.known.values() if n]
        role = roles.role_answer(self.question, answer, [line for _, line in shown], people)
        if role is not None:
            return role, f"who-question about whom it is done to: the line names {role!r}, not a person"
        return None


def _key(c: contradictions.Conflict) -> str:
    return f"conflict:{c.denied.label}:{c.denied.sentence}|{c.affirmed.label}:{c.affirmed.sentence}"


def _value_key(c: value_updates.Change) -> str:
    return "value:" + "|".join(f"{v.label}:{v.quantity.key}:{v.sentence[:40]}" for v in c.said)
