"""Statements as slots: who or what a fact is about, which attribute it states, and its value (no model).

Why deterministic: the offline memorization model (0.5B) was measured splitting statements into subject,
attribute and value at 1.3 s per statement and misaligned a third of a batch of 40 (docs/evaluation.md, "Facts
that change"); a fact's slot decides which older fact it retires, so a wrong slot hides a true fact. The rules
here read plain declarative English; a statement they cannot read returns None and stays free text (nothing is
lost, it only never supersedes anything).

`parse_statement(text)` → `Statement | None`. Two statements share a slot when their `slot_key`s are equal:
the normalised subject and attribute, plus the normalised value for attributes that may hold several values at
once (`functional` False: "Ann likes mangoes" and "Ann likes apples" are two slots, so neither retires the
other; only "Ann no longer likes mangoes" does).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Statement:
    subject: str  # as written: "Apple Inc.", "<face_3>", "Mia"
    attribute: str  # as written: "chief executive officer", "favourite fruit", "likes"
    value: str  # as written: "Tim Cook", "mango"
    negated: bool = False  # "Ann does not like mangoes", "Bob is no longer married to Eve"
    changed: bool = False  # the statement itself marks a change: "now", "no longer", "anymore", "moved to", ...
    functional: bool = True  # the attribute holds one value at a time (a new value retires the old one)

    @property
    def subject_key(self) -> str:
        return normalise_name(self.subject)

    @property
    def attribute_key(self) -> str:
        return normalise_attribute(self.attribute)

    @property
    def value_key(self) -> str:
        return normalise_name(self.value)

    @property
    def slot_key(self) -> str:
        base = f"{self.subject_key} · {self.attribute_key}"
        return base if self.functional else f"{base} · {self.value_key}"


def normalise_name(text: str) -> str:
    raise NotImplementedError


def normalise_attribute(text: str) -> str:
    raise NotImplementedError


def parse_statement(text: str) -> Statement | None:
    raise NotImplementedError
