"""Which questions ask for several things (the controller then widens its first search, `gathering.py`)."""

from __future__ import annotations

import pytest

from m3graph.reasoning.gathering import asks_for_a_list


@pytest.mark.parametrize("question", [
    "What books has Melanie read?",
    "Which events has Jon participated in to promote his business?",
    "What musical artists/bands has Melanie seen?",
    "What are Melanie's pets' names?",
    "What kinds of art does Caroline make?",
    "List the places Maria has visited.",
])
def test_list_questions(question: str) -> None:
    assert asks_for_a_list(question)


@pytest.mark.parametrize("question", [
    "What is Caroline's favourite book?",
    "What kind of art does Caroline make?",  # one kind
    "What is John's main focus in politics?",  # "John's" is a name, not a plural
    "What do sunflowers represent according to Caroline?",  # the verb ends the phrase
    "What Jon thinks the ideal studio looks like?",
    "When did Melanie paint a sunrise?",
    "Where is the kitchen shelf?",
    "How many different people speak in this video?",  # a count, not a list
])
def test_questions_about_one_thing(question: str) -> None:
    assert not asks_for_a_list(question)
