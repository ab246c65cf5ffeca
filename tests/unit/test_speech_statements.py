"""Statements from speech (`m3graph.speech_statements`): person rewritten into a subject, then the one parser."""

from __future__ import annotations

import pytest

from m3graph.devkit.eval.statements import SPEECH_SAMPLE, _load, measure_speech
from m3graph.speech_statements import read_turn
from m3graph.statements import parse_statement


def _read(text: str, speaker: str = "Nora", addressee: str | None = "Bob") -> list[tuple[str, str, bool, bool]]:
    return [(s.statement.slot_key, s.statement.value, s.statement.negated, s.statement.changed)
            for s in read_turn(text, speaker, addressee)]


@pytest.mark.parametrize(("text", "expected"), [
    ("I moved to Porto.", [("nora · live in", "Porto", False, True)]),
    ("My manager is Ana.", [("nora · manager", "Ana", False, False)]),
    ("I have two kids.", [("nora · have · two kid", "two kids", False, False)]),
    ("I'm a teacher.", [("nora · be · teacher", "teacher", False, False)]),
    ("I'm 32 years old.", [("nora · age", "32", False, False)]),
    ("I'm married to Tom.", [("nora · spouse", "Tom", False, False)]),
    ("Yeah, I live in Lisbon now.", [("nora · live in", "Lisbon", False, True)]),
    ("I used to live in Lisbon.", [("nora · live in", "Lisbon", True, True)]),
    ("I have never used Rust.", [("nora · use · rust", "Rust", True, False)]),
    ("I don't use Rust.", [("nora · use · rust", "Rust", True, False)]),
    ("I use Rust every day!", [("nora · use · rust", "Rust", False, False)]),
    ("I've been working at Farfetch for a while now.", [("nora · employed by", "Farfetch", False, False)]),
    ("Hey Bob, I moved to Porto last month!", [("nora · live in", "Porto", False, True)]),
])
def test_first_person_is_the_speaker(text: str, expected: list[tuple[str, str, bool, bool]]) -> None:
    assert _read(text) == expected


def test_clauses_split_and_each_reads_alone() -> None:
    assert _read("I moved to Porto and I work at Farfetch.") == [
        ("nora · live in", "Porto", False, True), ("nora · employed by", "Farfetch", False, False)]
    # a hypothetical clause is dropped, the asserted one beside it stands
    assert _read("I would move to Madrid, but I live in Porto.") == [("nora · live in", "Porto", False, False)]


def test_second_person_is_the_addressee_only_between_two_speakers() -> None:
    assert _read("You work at Google, right.") == [("bob · employed by", "Google", False, False)]
    assert _read("Your sister is called Eve.") == [("bob's sister · name", "Eve", False, False)]
    assert _read("You work at Google.", addressee=None) == []  # three speakers: "you" is not resolved


def test_a_pronoun_is_the_last_named_subject_of_the_turn_or_nothing() -> None:
    assert _read("My sister moved to Berlin. She works at Zalando.") == [
        ("nora's sister · live in", "Berlin", False, True), ("nora's sister · employed by", "Zalando", False, False)]
    assert _read("She works at Zalando.") == []  # no antecedent in the turn
    assert _read("I moved to Porto. She works at Zalando.") == [("nora · live in", "Porto", False, True)]


@pytest.mark.parametrize("text", [
    "We switched to Postgres.",  # a group is not the speaker
    "Do you live in Porto?",
    "If I get the job, I move to Madrid.",
    "I love it.",  # a pronoun value
    "I love how it's both a creative outlet and a form of therapy.",
    "I'm having trouble with my business project.",
    "I've been reading about query optimization techniques.",
    "My family has been there for me all the way.",
    "I'm so happy for you.",
    "I really appreciate your help.",
])
def test_what_is_not_a_statement_stays_free_text(text: str) -> None:
    assert _read(text) == []


def test_the_stored_sentence_reads_back_as_the_same_statement() -> None:
    for said in read_turn("I moved to Porto and my manager is Ana. My sister likes tea.", "Nora", "Bob"):
        assert parse_statement(said.sentence) == said.statement


def test_the_labelled_speech_sample_loads_and_keeps_its_precision() -> None:
    rows = [r for r in _load(SPEECH_SAMPLE) if r["split"] in ("dev", "held")]  # the update lines: test_speech_updates
    assert len(rows) == 220
    report = measure_speech(rows)
    assert report.expected >= 8 and report.none_expected >= 200
    assert report.false_parse + report.wrong_slot <= 2  # a wrong slot hides a true fact: precision comes first
