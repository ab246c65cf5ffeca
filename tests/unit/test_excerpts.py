"""Query-focused excerpts of long file passages (graphdb/excerpts.py, issue 39): the answering sentence of a long
passage is shown within the reader's cut, with the passage's header (file, page, section) kept."""

from __future__ import annotations

from m3graph.graphdb.excerpts import ELLIPSIS, EXCERPT_CHARS, MAX_UNIT, excerpt, units
from m3graph.graphdb.passages import terms
from m3graph.reasoning.control import PASSAGE_CHARS

HEADER = "[file spec.pdf, document, page 9, 3 Font names > FontName, shared by Ann <character_4>] "
FILLER = " ".join(f"Clause {i} says how a registry prefix is written and who assigns it." for i in range(14))
ANSWER = "The entire font name string must have no more than 255 characters."
TAIL = " ".join(f"Note {i} covers encodings of other parts." for i in range(5))


def test_the_excerpt_stays_within_the_readers_cut() -> None:
    assert EXCERPT_CHARS < PASSAGE_CHARS  # the reader's `_cut` must never fall inside an excerpt


def test_the_answering_sentence_past_the_cut_is_shown_with_the_header() -> None:
    text = f"{HEADER}{FILLER} {ANSWER} {TAIL}"
    assert len(text) > PASSAGE_CHARS and text.index(ANSWER) > PASSAGE_CHARS  # the old cut lost it
    shown = excerpt(text, terms("What is the maximum length of a whole font name string?"))
    assert len(shown) <= EXCERPT_CHARS
    assert shown.startswith(HEADER)
    assert ANSWER in shown
    assert shown[len(HEADER):].startswith(ELLIPSIS)  # the dropped beginning is marked


def test_a_short_passage_or_one_without_the_terms_is_unchanged() -> None:
    short = f"{HEADER}{ANSWER}"
    assert excerpt(short, terms("font name length")) == short
    long = f"{HEADER}{FILLER} {TAIL}"
    assert excerpt(long, terms("penguins migrate")) == long
    assert excerpt(long, []) == long


def test_units_split_sentences_rows_and_long_runs() -> None:
    assert units("One. Two!\nRow | a | b\nThree") == ["One.", "Two!", "Row | a | b", "Three"]
    run_on = " ".join(["word"] * 200)
    assert all(len(u) <= MAX_UNIT for u in units(run_on))
    assert " ".join(units(run_on)) == run_on
