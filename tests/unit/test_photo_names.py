"""Who a turn introduces with its photo (`ingest.chat.photo_names`): one person after an introduction, or nobody."""

from __future__ import annotations

import pytest

from m3graph.ingest.chat.photo_names import introduced_name

SPEAKERS = ("Ann", "Sam")


@pytest.mark.parametrize(("text", "name"), [
    ("Good! This is my sister Lena.", "Lena"),
    ("And this is my old school friend Marco Rossi!", "Marco Rossi"),
    ("Here is a photo of Priya at the harbour in Lisbon.", "Priya"),
    ("Meet Anne-Marie, my new flatmate.", "Anne-Marie"),
    ("This is Lena, my sister.", "Lena"),
    ("Say hi to Kofi", "Kofi"),
])
def test_one_introduced_person_is_named(text: str, name: str) -> None:
    assert introduced_name(text, SPEAKERS) == name


@pytest.mark.parametrize("text", [
    "Look who I ran into at the bookshop!",  # nobody introduced
    "This is Lena and Marco.", "This is Lena, Marco and Ivy", "Meet Tomas and his brother",  # several people
    "Me and Lena at the lake", "This is us with Lena", "Selfie! This is Lena",  # the speaker may be the face
    "This is Sam.", "This is Ann",  # a speaker of the conversation
    "this is my dog Biscuit", "Here's a photo of my car Betty",  # not a person
    "This is the receipt from Bistro Luna", "This is May.", "this is lena", "Lisbon was lovely",
    "This is Lena. And this is Marco.",  # two introductions in one turn
])
def test_ambiguous_or_no_introduction_names_nobody(text: str) -> None:
    assert introduced_name(text, SPEAKERS) is None
