"""Which questions get the speaker lookup, and how a remembered line says who said it (reasoning/speakers.py,
graphdb/speech.py): no graph."""

from __future__ import annotations

import pytest

from m3graph.graphdb.speech import MATCH_FLOOR, said_line, similarity
from m3graph.reasoning.speakers import QUOTES_CHECKED, asks_how_many_speak, quotes_about_speakers

SAME = ('Was the person who said "Please put the coffee on the green table." the same person who said "My '
        'favourite fruit is a ripe mango."?')


@pytest.mark.parametrize(("question", "quotes"), [
    (SAME, ["Please put the coffee on the green table.", "My favourite fruit is a ripe mango."]),
    ("Who said “We need more water for the plants”?", ["We need more water for the plants"]),
    ('What is the favourite fruit of whoever said: "I like the blue one"?', ["I like the blue one"]),
    # A quote in another role is a time anchor or a title, not a question about its speaker.
    ('How many people were on screen when someone said "I bought fresh bread at the market."?', []),
    ('Where is the "The Three Little Pigs" now?', []),
    ('Who said "hello"?', []),  # fewer than three words: a word, not a line
    ("Who said the coffee was cold?", []),
])
def test_quotes_about_speakers(question: str, quotes: list[str]) -> None:
    assert quotes_about_speakers(question) == quotes


def test_quotes_are_bounded() -> None:
    question = " and ".join(f'who said "line number {i} here"' for i in range(10))
    assert QUOTES_CHECKED == 4 and len(quotes_about_speakers(question)) == 4


@pytest.mark.parametrize(("question", "counts"), [
    ("How many different people speak in this video?", True),
    ("How many people spoke in the video?", True),
    ("How many speakers are there?", True),
    ("how many distinct voices are talking in the clip?", True),
    ('How many people were on screen when someone said "I bought fresh bread"?', False),
    ("How many people attended the party last night?", False),
    ("How many languages does Wasim speak?", False),
])
def test_asks_how_many_speak(question: str, counts: bool) -> None:
    assert asks_how_many_speak(question) is counts


def _label(video: str, clip: int) -> str:
    return f"{video}/CLIP_{clip}"


def test_a_said_line_names_its_speaker_by_character() -> None:
    row = {"source_id": "v", "clip_index": 2, "text": '<voice_8> says: "Please put the coffee on the table."',
           "chars": [["voice", 8, 7], ["face", 3, 7]]}
    line = said_line(row, _label)
    assert line is not None
    assert (line.label, line.who, line.key, line.body) == ("v/CLIP_2", "<character_7>", ("character", 7),
                                                           "Please put the coffee on the table.")
    # A voice no character holds yet is its own speaker; a conversation's turn keeps its speaker's name.
    line = said_line({**row, "chars": [["voice", 8, None]]}, _label)
    assert line is not None and (line.who, line.key) == ("<voice_8>", ("voice", 8))
    line = said_line({"source_id": "c", "clip_index": 0, "text": "Ann <speaker_3>: I went to Rome.",
                      "chars": [["speaker", 3, 1]]}, _label)
    assert line is not None and (line.who, line.key, line.body) == ("Ann <character_1>", ("character", 1),
                                                                    "I went to Rome.")
    # Lines that are not somebody saying something.
    for text in ("<face_7> is on screen from 0.0 s to 29.8 s.", "<face_7> and <face_9> appear in the same scene.",
                 "From 0.0 s to 30.0 s the scene is mostly dark."):
        assert said_line({**row, "text": text}, _label) is None


def test_a_transcripts_slips_still_match_a_quote() -> None:
    assert similarity("My favourite fruit is a ripe mango.", "My favorite fruit in a ripe mango.") >= MATCH_FLOOR
    assert similarity("The red car is parked near the garden.", "The men's car is parked near the garden.") \
        >= MATCH_FLOOR
    assert similarity("Please put the coffee on the green table.", "We need more water for the plants.") \
        < MATCH_FLOOR
    assert similarity("", "anything") == 0.0
