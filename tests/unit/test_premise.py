"""The names a question gives (m3graph/reasoning/premise.py `named_things`): no graph."""

from __future__ import annotations

import pytest

from m3graph.reasoning.premise import named_things, not_mentioned_message


@pytest.mark.parametrize(("question", "names"), [
    ("What did Jon take a trip to Barcelona for?", ["Jon", "Barcelona"]),
    ("Where is Gina's HR internship?", ["Gina", "HR"]),
    ("When did Gina mention Shia Labeouf?", ["Gina", "Shia Labeouf"]),
    ("When did Jon and Gina meet at the Dance Festival in May?", ["Jon", "Gina", "Dance Festival"]),
    ("Would Caroline likely have Dr. Seuss books?", ["Caroline", "Seuss"]),  # a title is not a name
    ("What fruit does Mia like on Sunday?", ["Mia"]),  # weekdays and months are not names
    ("Barcelona: what did I see there?", []),  # a question's first word starts a sentence
    # Quoted sentences start with a capital that names nothing.
    ('Was the person who said "Please put the coffee on the green table." the same person who said "My '
     'favourite fruit is a ripe mango."?', []),
    ("When did the 5K run in the U.S. start?", []),  # numbers and abbreviations are not names
    ("Which PDF did Ann send with the Word document?", ["Ann"]),  # file kinds and types are not names
    ("", []),
])
def test_named_things(question: str, names: list[str]) -> None:
    assert named_things(question) == names


def test_the_message_names_what_is_missing() -> None:
    assert not_mentioned_message(["Barcelona"]) == "Not in memory: nothing remembered mentions Barcelona."
    assert not_mentioned_message(["HR", "Paris"]) == "Not in memory: nothing remembered mentions HR or Paris."
