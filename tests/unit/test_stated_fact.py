"""The memory's own statement wins over what the reader knew (`m3graph/reasoning/stated_fact.py`): it fires only
where a shown statement answers exactly what the question asks, and never on a question that asks a further hop."""

from __future__ import annotations

from m3graph.reasoning.stated_fact import holds, stated_value

SHOWN = [
    "quarterback is associated with the sport of Muay Thai.",
    "The author of Lanterns of Brask is Mira Tolvane.",
    "Mira Tolvane is married to Joss Arden.",
    "Robert Parish plays the position of quarterback.",
    "The capital of Italy is Duluth. (latest, holds now)",
]


def _value(question: str, lines: list[str] = SHOWN) -> str | None:
    found = stated_value(question, lines)
    return found.value if found else None


def test_a_statement_answering_exactly_the_question_gives_its_value() -> None:
    assert _value("Which sport is quarterback associated with?") == "Muay Thai"
    assert _value("What is the capital of Italy?") == "Duluth"  # the controller's mark is not part of it
    assert _value("Who is the spouse of Mira Tolvane?") == "Joss Arden"  # the parser's name for "married to"


def test_a_question_asking_a_further_hop_gets_nothing() -> None:
    assert _value("Who is the spouse of the author of Lanterns of Brask?") is None  # words left for a hop
    assert _value("Which sport is associated with the position Robert Parish plays?") is None


def test_yes_no_questions_named_values_and_disagreeing_lines_get_nothing() -> None:
    assert _value("Is the capital of Italy Duluth?") is None
    assert _value("Which city is the capital of Italy, Duluth?") is None  # the question names the value
    assert _value("What is the capital of Italy?", ["The capital of Italy is Rome. (superseded on CLIP_1)",
                                                    "The capital of Italy is Duluth. (latest, holds now)"]) is None
    assert _value("What is the capital of Italy?", ["Ann said the capital of Italy is Rome because she read it."]) \
        is None  # not a statement the parser reads safely


def test_an_answer_that_gives_the_value_stands() -> None:
    assert holds("It is Duluth.", "Duluth") and holds("Muay Thai", "muay thai")
    assert not holds("association football", "Muay Thai") and not holds("", "Duluth")
