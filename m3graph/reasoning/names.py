"""People by name in what the reader sees and in what it answers (issue 36).

Why: the graph knows "<character_4>'s name is Mia", yet the reader was shown only tags, so a who-question came
back as "character_7". Here, for the reader (the controller's tools mode; the M3 contract keeps the research
format its checkpoint was trained on):

- a shown line names each tagged person it does not already name: ``Mia (<character_4>) says: "..."``; the tag
  stays, so every rule that parses tags still does. A line that already holds the name (a chat turn ``Mia
  <character_4>: ...``, the fact ``<character_4>'s name is Mia``) is left as it was, and so is a tag whose person
  has no name.
- an answer's tags are rendered with the name where one is known: ``<character_7>`` or ``character_7`` becomes
  ``Mia (character_7)``; a tag the reader copied with its name (``Mia (<character_7>)``) keeps the name once.

The names are `m3graph.graphdb.facts.character_names` (a character's current name fact, else its speaker's
name), read once per question for the tags it meets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from m3graph.graphdb.executor import Executor
from m3graph.graphdb.facts import character_names

_CHARACTER = re.compile(r"<character_(\d+)>", re.IGNORECASE)
# In an answer: "<character_7>", "character_7", "Character 7", with the name the reader may have copied before it.
_ANSWER_TAG = re.compile(r"(?:(?P<named>[^\W\d_][\w.'’ -]{0,60}?)\s*\(\s*)?<?\bcharacter[_ ](?P<id>\d+)\b>?"
                         r"(?(named)\s*\))", re.IGNORECASE)


def _says(text: str, name: str) -> bool:
    """The text names the person: the full name or the first name, as a whole word."""
    forms = {name, name.split()[0]} if name.split() else {name}
    return any(re.search(rf"(?<!\w){re.escape(f)}(?!\w)", text, re.IGNORECASE) for f in forms if f)


class NameBook:
    """One question's display names of the characters its lines tag, read from the graph once per character."""

    def __init__(self, ex: Executor) -> None:
        self.ex = ex
        self.known: dict[int, str | None] = {}

    def lookup(self, char_ids: Iterable[int]) -> dict[int, str]:
        char_ids = list(char_ids)
        missing = sorted({c for c in char_ids if c not in self.known})
        if missing:
            found = character_names(self.ex, missing)
            self.known.update({c: found.get(c) for c in missing})
        return {c: n for c in char_ids if (n := self.known.get(c))}

    def line(self, text: str) -> str:
        """The line with each tagged person it does not name yet named before the tag, once."""
        names = self.lookup(int(m.group(1)) for m in _CHARACTER.finditer(text))
        return name_tags(text, names)

    def plain(self, line: str) -> str:
        """The line as stored, without the names `line` put beside its tags (what a query copying it is compared
        with: a query naming the person is not a copy of a line only because the line now names them too)."""
        for char, name in self.known.items():
            if name:
                line = line.replace(f"{name} (<character_{char}>)", f"<character_{char}>")
        return line

    def answer(self, text: str) -> str:
        """The answer with every character tag rendered as ``Name (character_K)`` where the name is known."""
        names = self.lookup(int(m.group("id")) for m in _ANSWER_TAG.finditer(text))
        return name_answer(text, names)


def name_tags(text: str, names: dict[int, str]) -> str:
    """`NameBook.line` over given names (char id -> display name)."""
    done: set[int] = set()

    def one(match: re.Match[str]) -> str:
        char = int(match.group(1))
        name = names.get(char)
        if name is None or char in done or _says(text, name):
            return match.group(0)
        done.add(char)
        return f"{name} ({match.group(0)})"

    return _CHARACTER.sub(one, text)


def name_answer(text: str, names: dict[int, str]) -> str:
    """`NameBook.answer` over given names."""

    def one(match: re.Match[str]) -> str:
        char = int(match.group("id"))
        name = names.get(char)
        if name is None:
            return match.group(0)
        copied = match.group("named")
        if copied and _says(copied, name):
            return f"{copied.strip()} (character_{char})"
        lead = f"{copied.strip()} " if copied else ""
        return f"{lead}{name} (character_{char})"

    return _ANSWER_TAG.sub(one, text)
