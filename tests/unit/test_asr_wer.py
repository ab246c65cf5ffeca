"""The word error rate of bench/asr_wer.py: the edit distance on normalised words, and the corpus-level ratio."""

from __future__ import annotations

import pytest

from bench.asr_wer import normalise, wer, word_errors


def test_normalise_drops_case_and_punctuation_but_keeps_inner_apostrophes() -> None:
    assert normalise("Oh, hello. I didn't know you were there!") == ["oh", "hello", "i", "didn't", "know", "you",
                                                                      "were", "there"]
    assert normalise("Hello?") == normalise("hello") == ["hello"]
    assert normalise("'Quoted' \u2019tis") == ["quoted", "tis"]
    assert normalise(" ... ") == []


@pytest.mark.parametrize(("reference", "hypothesis", "errors"), [
    ("the red car is parked", "the red car is parked", 0),
    ("the red car is parked", "the men's car is parked", 1),  # substitution
    ("i bought fresh bread at the market", "i want fresh red at the market", 2),  # two substitutions
    ("the blue notebook is here", "the blue note book is here", 2),  # substitution + insertion
    ("we need more water", "we need water", 1),  # deletion
    ("we need more water", "", 4),  # all deleted
    ("", "hello there", 2),  # all inserted
    ("a b c d", "d c b a", 4),  # reversed: 4 (no transpositions)
])
def test_word_errors_is_the_levenshtein_distance_on_words(reference: str, hypothesis: str, errors: int) -> None:
    assert word_errors(reference.split(), hypothesis.split()) == errors


def test_wer_sums_errors_and_words_over_the_set() -> None:
    pairs = [("The red car is parked.", "The men's car is parked"),  # 1 / 5
             ("Hello?", "hello"),  # 0 / 1
             ("We need more water for the plants.", "We need water for plants")]  # 2 / 7
    assert wer(pairs) == pytest.approx(3 / 13)
    assert wer([("one two", "one two three four")]) == pytest.approx(1.0)  # insertions count: WER can reach 100 %
    with pytest.raises(ValueError):
        wer([("?!", "anything")])
