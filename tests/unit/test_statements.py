"""The statement → slot rules (m3graph.statements): forms, None cases, normalisation, functional, markers."""

from __future__ import annotations

import pytest

from m3graph.devkit.eval.statements import measure
from m3graph.statements import Statement, normalise_attribute, normalise_name, parse_statement


def _parse(text: str) -> Statement:
    got = parse_statement(text)
    assert got is not None, text
    return got


@pytest.mark.parametrize(("text", "subject", "attribute", "value"), [
    ("Thomas Kyd was born in the city of London.", "thomas kyd", "born in", "london"),
    ("The chairperson of Fatah is Mahmoud Abbas.", "fatah", "chairperson", "mahmoud abbas"),
    ("Mike D'Antoni plays the position of point guard.", "mike d'antoni", "play position", "point guard"),
    ("Elvis Presley is married to Priscilla Presley.", "elvis presley", "spouse", "priscilla presley"),
    ("quarterback is associated with the sport of Muay Thai.", "quarterback", "associated with sport", "muay thai"),
    ("Chanel was founded by Andy Warhol.", "chanel", "founded by", "andy warhol"),
    ("Leo Stein is a citizen of United States of America.", "leo stein", "citizen of", "united states of america"),
    ("Ron Dennis is employed by McLaren Automotive.", "ron dennis", "employed by", "mclaren automotive"),
    ("The univeristy where Galileo Galilei was educated is University of Pisa.", "galileo galilei",
     "univeristy educated", "university of pisa"),
    ("Hugh Hefner is famous for Playboy.", "hugh hefner", "famous for", "playboy"),
    ("Olga of Kiev died in the city of Kyiv.", "olga of kiev", "died in", "kyiv"),
    ("Born in the U.S.A. was performed by Bruce Springsteen.", "born in the u.s.a.", "performed by",
     "bruce springsteen"),
    ("Australia is located in the continent of Oceania.", "australia", "located in", "oceania"),
    ("The headquarters of University of California, Berkeley is located in the city of Berkeley.",
     "university of california, berkeley", "headquarter located in", "berkeley"),
    ("Pedro Pierluisi worked in the city of Washington, D.C..", "pedro pierluisi", "worked in", "washington, d.c."),
    ("Laura Bush is married to Princess Alice, Duchess of Gloucester.", "laura bush", "spouse",
     "princess alice, duchess of gloucester"),
    ("The name of the current head of the Pittsburgh government is Bill Peduto.", "pittsburgh",
     "head of government", "bill peduto"),
    ("The name of the current head of state in United States of America is Donald Trump.",
     "united states of america", "head of state", "donald trump"),
    ("The type of music that John McVie plays is rock music.", "john mcvie", "type of music play", "rock music"),
    ("The company that produced Ford F-Series is Ford Motor Company.", "ford f-series", "company that produced",
     "ford motor company"),
    ("The Wheel of Time was written in the language of English.", "wheel of time", "written in language",
     "english"),
    ("Sasanian Empire was founded by Ardashir I.", "sasanian empire", "founded by", "ardashir i"),
    ("Caroline's favourite fruit is mango.", "caroline", "favourite fruit", "mango"),
    ("Bob lives in Lisbon.", "bob", "live in", "lisbon"),
    ("Jon works as a teacher.", "jon", "work as", "teacher"),
    ("Mia's name is Mia Wong.", "mia", "name", "mia wong"),
    ("Marco's dog is called Biscuit.", "marco's dog", "name", "biscuit"),
    ("<face_3>'s favourite fruit is mango.", "face_3", "favourite fruit", "mango"),
    ("<character_2> lives in Berlin.", "character_2", "live in", "berlin"),
    ("<voice_1>'s name is Mia.", "voice_1", "name", "mia"),
])
def test_forms_read_as_slots(text: str, subject: str, attribute: str, value: str) -> None:
    got = _parse(text)
    assert (got.subject_key, got.attribute_key, got.value_key) == (subject, attribute, value)


@pytest.mark.parametrize("text", [
    "Ann <speaker_3>: I adopted a puppy",
    "What is Bob's favourite fruit?",
    "I like mangoes.",
    "You live in Paris.",
    "We moved to Berlin.",
    "She lives in Rome.",
    "My sister lives in Oslo.",
    "Call Bob tomorrow.",
    "Ann likes mangoes and Bob lives in Lisbon.",
    "Ann and Bob like hiking.",
    "Bob lives in Lisbon but works in Porto.",
    "Mia said that she likes tea.",
    "<face_3> is smiling at the camera.",
    "Ann is not sure.",
    "",
])
def test_what_cannot_be_read_safely_is_none(text: str) -> None:
    assert parse_statement(text) is None


def test_names_keep_inner_punctuation_and_lose_the_sentence_period() -> None:
    assert normalise_name("Washington, D.C..") == "washington, d.c."
    assert normalise_name("Apple Inc.") == "apple inc."
    assert normalise_name("The  Beatles.") == "beatles"
    assert normalise_name("<face_3>") == "face_3"
    assert normalise_name("mangoes") == normalise_name("mango")
    assert normalise_name("Athens") == "athens"  # a written name keeps its final s


def test_attributes_fold_auxiliaries_fillers_spelling_and_synonyms() -> None:
    assert normalise_attribute("was born in the city of") == normalise_attribute("was born in") == "born in"
    assert normalise_attribute("favorite color") == normalise_attribute("favourite colour")
    assert normalise_attribute("likes") == normalise_attribute("like") == "like"
    assert normalise_attribute("is married to") == normalise_attribute("husband") == "spouse"
    assert normalise_attribute("moved to") == normalise_attribute("lives in") == "live in"
    assert normalise_attribute("CEO") == "chief executive officer"
    assert normalise_attribute("is associated with the sport of") == "associated with sport"


def test_a_move_lands_in_the_slot_of_where_someone_lives() -> None:
    lives, moved = _parse("Bob lives in Lisbon."), _parse("Bob moved to Porto.")
    assert lives.slot_key == moved.slot_key
    assert moved.changed and not lives.changed
    assert lives.value_key != moved.value_key


def test_functional_attributes_share_one_slot_across_values() -> None:
    a, b = _parse("Melanie's favourite fruit is mango."), _parse("Melanie's favorite fruit is now apples.")
    assert a.functional and b.functional and a.slot_key == b.slot_key
    assert b.changed and not a.changed


def test_preferences_and_possessions_keep_the_value_in_the_slot() -> None:
    likes, apples = _parse("Ann likes mangoes."), _parse("Ann likes apples.")
    assert not likes.functional and likes.slot_key != apples.slot_key
    stopped = _parse("Ann does not like mangoes anymore.")
    assert stopped.slot_key == likes.slot_key and stopped.negated and stopped.changed
    has = _parse("Ann has a dog named Pixel.")
    assert not has.functional and has.attribute_key == "have" and has.value_key == "dog named pixel"


@pytest.mark.parametrize(("text", "negated", "changed"), [
    ("Ann doesn't like olives.", True, False),
    ("Ann never liked olives.", True, False),
    ("Lena no longer lives in Vienna.", True, True),
    ("Lena is not married to Paul anymore.", True, True),
    ("Hiro is now employed by Honda.", False, True),
    ("Now Bob lives in Porto.", False, True),
    ("Harold works for Bosch now.", False, True),
    ("Bob lives in Porto.", False, False),
])
def test_negation_and_change_markers(text: str, negated: bool, changed: bool) -> None:
    got = _parse(text)
    assert (got.negated, got.changed) == (negated, changed)
    assert "now" not in got.value_key.split()


def test_near_duplicates_in_different_slots_stay_apart() -> None:
    assert _parse("Omar's favourite food is sushi.").slot_key != _parse("Paula's favourite food is sushi.").slot_key
    assert _parse("Bob lives in Madrid.").slot_key != _parse("Bob works in Madrid.").slot_key
    assert _parse("Evan's favourite colour is blue.").slot_key != _parse("Evan's favourite food is blue.").slot_key


def test_a_title_with_of_is_not_read_as_the_a_of_s() -> None:
    assert _parse("The Wheel of Time is a novel.").subject_key == "wheel of time"
    assert _parse("The author of A Wizard of Earthsea is Ursula K. Le Guin.").subject_key == "wizard of earthsea"


def test_the_labelled_sample_keeps_its_precision_and_coverage() -> None:
    # measured when the parser was written: 91/91 right slots, 91/92 parsed, 21/21 None (the sample is small:
    # a single wrong slot drops precision to ~98.9%, so the floor allows one)
    report = measure()
    assert report.expected >= 90 and report.none_expected >= 20
    assert report.precision >= 0.98, report.errors
    assert report.coverage >= 0.95, report.errors
    assert report.none_correct == report.none_expected, report.errors
