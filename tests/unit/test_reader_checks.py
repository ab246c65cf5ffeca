"""The reader's model-free rules (issues 36 and 38), on constructed lines: names beside tags and in answers, a
who-question's role, a question's time as "as of", statements that changed, and contradictions named."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from m3graph.reasoning import contradictions
from m3graph.reasoning.answer_checks import Checks
from m3graph.reasoning.as_of import question_as_of
from m3graph.reasoning.contradictions import conflict_answer, conflicts, touching
from m3graph.reasoning.names import NameBook, name_answer, name_tags
from m3graph.reasoning.recency import change_note, changes, newest_answer
from m3graph.reasoning.roles import patient_verb, role_answer

# ------------------------------------------------------------------------------------------------ names


def test_a_line_names_each_tagged_person_it_does_not_name_yet() -> None:
    names = {4: "Mia", 7: "Jack Ross"}
    assert name_tags('<character_4> says: "Hi <character_7>."', names) == \
        'Mia (<character_4>) says: "Hi Jack Ross (<character_7>)."'
    assert name_tags("Mia <character_4>: hello", names) == "Mia <character_4>: hello"  # a chat turn names her
    assert name_tags("<character_4>'s name is Mia.", names) == "<character_4>'s name is Mia."
    assert name_tags("Jack said <character_7> and <character_7> again", names) == \
        "Jack said <character_7> and <character_7> again"  # the first name counts
    assert name_tags("<character_9> waves and <character_4> waves back.", names) == \
        "<character_9> waves and Mia (<character_4>) waves back."  # no name known: the tag alone


@pytest.mark.parametrize(("answer", "rendered"), [
    ("<character_7>", "Jack Ross (character_7)"),
    ("character_7", "Jack Ross (character_7)"),
    ("Character 7.", "Jack Ross (character_7)."),
    ("Jack Ross (<character_7>)", "Jack Ross (character_7)"),
    ("<character_4> and <character_9>", "Mia (character_4) and <character_9>"),
    ("The doctor", "The doctor"),
])
def test_an_answers_tags_are_named(answer: str, rendered: str) -> None:
    assert name_answer(answer, {4: "Mia", 7: "Jack Ross"}) == rendered


class _Names:
    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def read(self, name: str, **params: Any) -> list[dict[str, Any]]:
        assert name == "facts/character_names"
        self.calls.append(params["char_ids"])
        return [{"char_id": 4, "fact_name": "Mia", "speaker_name": None}]


def test_the_name_book_reads_each_character_once() -> None:
    ex = _Names()
    book = NameBook(ex)  # type: ignore[arg-type]
    assert book.line("<character_4> and <character_5> eat.") == "Mia (<character_4>) and <character_5> eat."
    assert book.line("<character_5> and <character_4> leave.") == "<character_5> and Mia (<character_4>) leave."
    assert book.answer("character_4") == "Mia (character_4)"
    assert ex.calls == [[4, 5]]


# ------------------------------------------------------------------------------------------------ roles

CALL = '<character_7> says: "Remember to call the doctor tomorrow morning."'


@pytest.mark.parametrize(("question", "verb"), [
    ("Who should be called tomorrow morning?", "called"), ("Who was invited to the party?", "invited"),
    ("Who did Mia call?", "call"), ("Whom does Jon need to visit?", "visit"),
    ("Who is Mia's brother?", None), ("Who is called Jack?", None), ("Who reads the newspaper?", None),
    ("Who did Caroline go with?", None), ("Who called the doctor?", None),
    ("Who did John work with to raise awareness and funds for victims of domestic abuse?", None),  # LoCoMo dev
])
def test_patient_questions(question: str, verb: str | None) -> None:
    assert patient_verb(question) == verb


def test_a_who_question_about_whom_it_is_done_to_gets_the_role() -> None:
    q = "Who should be called tomorrow morning?"
    assert role_answer(q, "character_7", [CALL]) == "The doctor"
    assert role_answer(q, "Jack", [CALL], people=["Jack"]) == "The doctor"
    assert role_answer(q, "The doctor", [CALL]) is None  # already the role
    assert role_answer(q, "tomorrow", [CALL]) is None  # not a person: the rule stays out
    assert role_answer(q, "character_7", ['<character_7> says: "Remember to call me tomorrow."']) is None
    assert role_answer("Who reads the newspaper?", "character_7", [CALL]) is None
    two = [CALL, '<character_2> says: "Please call the plumber."']
    assert role_answer(q, "character_7", two) == "The doctor"  # the line sharing "tomorrow morning"
    assert role_answer("Who should be called?", "character_7", two) is None  # two roles, none singled out


# ------------------------------------------------------------------------------------------------ as of


@pytest.mark.parametrize(("question", "day"), [
    ("Where did Nora live in April 2025?", date(2025, 4, 30)),
    ("What car did Nora drive on 3 May 2025?", date(2025, 5, 3)),
    ("Where did she live in 2024?", date(2024, 12, 31)),
    ("Where did Nora live before April 2025?", date(2025, 3, 31)),
    ("Where did Nora live last summer?", date(2024, 8, 31)),
    ("Where did Nora live last week?", None),  # a relative day or week: not read
    ("Where did Nora live after April 2025?", None),  # a range, not a point
    ("When did Nora move in 2025?", None),  # asks for a time
    ("How long did Nora live in Lisbon in 2024?", None),
    ("Where does Nora live?", None),
])
def test_a_time_in_the_question_is_an_as_of_point(question: str, day: date | None) -> None:
    found = question_as_of(question, lambda: date(2025, 6, 1))
    assert (found.day if found else None) == day


def test_the_reference_is_read_only_for_a_relative_time() -> None:
    asked: list[int] = []

    def reference() -> date | None:
        asked.append(1)
        return None

    assert question_as_of("Where did Nora live in April 2025?", reference) is not None
    assert question_as_of("Where does Nora live?", reference) is None
    assert not asked
    assert question_as_of("Where did Nora live last summer?", reference) is None and asked


# ------------------------------------------------------------------------------------------------ recency

NORA = [("CLIP_0", "Nora <character_1>: Hi Bob! I live in Lisbon and I love the river."),
        ("CLIP_1", "Bob <character_2>: I live in Madrid."),
        ("CLIP_2", "Nora <character_1>: Guess what, I moved to Porto last month [= May 2025]!")]
DATES = {"CLIP_0": "10 January 2025", "CLIP_1": "3 February 2025", "CLIP_2": "1 June 2025"}


def test_statements_on_one_slot_are_shown_in_time_order_with_the_latest_marked() -> None:
    found = changes(NORA, DATES)
    assert [c.slot for c in found] == ["nora · live in"] and found[0].value == "Porto"  # Bob's is another slot
    assert change_note(found) == ("Said at different times about the same thing (oldest first):\n"
                                  "- [10 January 2025] Nora lives in Lisbon.\n"
                                  "- [1 June 2025] Nora moved to Porto. (latest, holds now)")
    then = changes(NORA, DATES, date(2025, 4, 30))
    assert then[0].value == "Lisbon" and "Lisbon. (held on 30 April 2025)" in (change_note(then, date(2025, 4, 30))
                                                                               or "")
    assert changes(NORA, DATES, date(2024, 1, 1)) == []  # nothing said by then


def test_facts_rendered_with_names_are_read_too() -> None:
    lines = [("CLIP_0", "Mia (<character_4>)'s favourite fruit is mango."),
             ("CLIP_3", "Mia (<character_4>)'s favourite fruit is kiwi. (superseded on 8 May 2023)")]
    found = changes(lines, {})
    assert found and [s.statement.value for s in found[0].said] == ["mango", "kiwi"]


def test_an_older_value_in_the_answer_becomes_the_one_that_holds() -> None:
    found = changes(NORA, DATES)
    assert newest_answer("She lives in Lisbon", found) == ("She lives in Porto", "Lisbon")
    assert newest_answer("Porto", found) is None
    assert newest_answer("Madrid", found) is None
    assert newest_answer("Lisbon, then Porto", found) is None  # the holding value is there
    same_day = [("CLIP_0", "Nora <character_1>: I live in Lisbon."), ("CLIP_0", "Nora <character_1>: I live in Porto.")]
    assert changes(same_day, {"CLIP_0": "1 June 2025"}) == []  # said in one clip: not a change over time


def test_the_checks_leave_the_past_alone_unless_a_time_is_named() -> None:
    past = Checks("Where did Nora live before she moved?", past=True)
    assert past.answer("Lisbon", NORA, DATES) is None
    now = Checks("Where does Nora live?")
    assert now.answer("Lisbon", NORA, DATES) == ("Porto", "recency: 'Lisbon' was said earlier; the value that "
                                                           "holds now replaces it")
    note = now.notes(NORA, DATES)
    assert note is not None and "latest, holds now" in note
    assert now.notes(NORA, DATES) is None  # reported once


# ------------------------------------------------------------------------------------------------ contradictions

NEVER = ("CLIP_5", "user <character_1>: I've never synchronized my server time with any NTP service, which might "
                   "be contributing to the clock skew issues.")
DID = ("CLIP_2", "user <character_1>: I'm trying to synchronize the server time with the NTP service to fix token "
                 "validation errors, but I'm not sure how to implement it.")
WHEN = {"CLIP_2": "2 March 2024", "CLIP_5": "20 March 2024"}
Q = "Have I ever synchronized my server time with an NTP service before?"


@pytest.mark.parametrize("order", [[NEVER, DID], [DID, NEVER]])
def test_a_denial_and_an_affirmation_are_named_in_either_order(order: list[tuple[str, str]]) -> None:
    found = conflicts(order, WHEN)
    assert len(found) == 1 and {"ntp", "server", "time"} <= found[0].shared
    answer = conflict_answer(Q, "Yes", found)
    assert answer is not None and answer.startswith("The memory holds conflicting statements: on 2 March 2024, user "
                                                    "said \"I'm trying to synchronize")
    assert 'on 20 March 2024, user said "I\'ve never synchronized' in answer and answer.endswith("Which one holds?")


@pytest.mark.parametrize("lines", [
    [NEVER, ("CLIP_2", "assistant <character_2>: You can synchronize the server time with the NTP service.")],
    [NEVER, ("CLIP_2", "user <character_1>: Should I synchronize the server time with the NTP service?")],
    [NEVER, ("CLIP_2", "user <character_1>: I have not synchronized the server time with the NTP service.")],
    [("CLIP_1", "user <character_1>: I don't know how to synchronize server time with NTP."), DID],
    [("CLIP_1", "user <character_1>: I haven't synchronized the server time with NTP yet."), DID],
    [("CLIP_1", "Jon <character_1>: You never know the difference a kind gesture can make."),
     ("CLIP_2", "Jon <character_1>: It's rewarding to know I'm making a difference!")],
])
def test_no_conflict_without_one_speakers_denial_and_affirmation(lines: list[tuple[str, str]]) -> None:
    assert conflicts(lines, WHEN) == []


def test_a_conflict_is_named_only_for_a_question_touching_it() -> None:
    found = conflicts([NEVER, DID], WHEN)
    assert touching("What is the capital of France?", found) == []
    assert conflict_answer("What NTP service did I use?", "pool.ntp.org", found) is None  # not yes/no
    assert conflict_answer("What NTP service did I use?", "No", found) is not None  # a bare no is not an answer
    rust = [("CLIP_0", "Nora <character_1>: I have never used Rust, I only write Go."),
            ("CLIP_1", "Nora <character_1>: I set up a Rust service last week.")]
    assert conflict_answer("Has Nora ever used Rust?", None, conflicts(rust, {})) is not None


def test_one_number_said_in_other_units_words_is_no_change() -> None:
    lines = [("CLIP_0", "user <character_1>: My token expiry is set to 3600 seconds."),
             ("CLIP_4", "user <character_1>: My token expiry is now 3600 s."),
             ("CLIP_5", "user <character_1>: My average response time is 250 ms."),
             ("CLIP_9", "user <character_1>: My average response time is 300 ms.")]
    found = changes(lines, {"CLIP_0": "3 February 2024", "CLIP_4": "2 March 2024", "CLIP_5": "7 May 2024",
                            "CLIP_9": "18 June 2024"})
    assert [c.slot for c in found] == ["user · average response time"] and found[0].value == "300 ms"
    assert newest_answer("About 250ms", found) == ("300 ms", "250 ms")


def test_a_query_is_compared_with_the_line_as_stored() -> None:
    book = NameBook(_Names())  # type: ignore[arg-type]
    line = book.line("<character_4> puts the newspaper on the green table.")
    assert line == "Mia (<character_4>) puts the newspaper on the green table."
    assert book.plain(line) == "<character_4> puts the newspaper on the green table."
    assert Checks("q", names=book).plain(line) == book.plain(line) and Checks("q").plain(line) == line


def test_a_statement_before_a_request_counts_a_plain_question_does_not() -> None:
    denial = ("CLIP_6", "User <character_8>: I have never actually solved a geometric series induction problem, so "
                        "can you help me prove the sum of a geometric series?")
    did = ("CLIP_5", "User <character_8>: I've solved 5 geometric series induction problems, but I'm still not "
                     "confident, can you walk me through one?")
    found = conflicts([did, denial], {"CLIP_5": "3 April 2024", "CLIP_6": "10 April 2024"})
    assert len(found) == 1 and found[0].denied.sentence.endswith("induction problem")
    asked = ("CLIP_5", "User <character_8>: Have I solved geometric series induction problems with you?")
    assert conflicts([asked, denial], {}) == []


@pytest.mark.parametrize(("question", "query"), [
    ("Have I ever used Rust in production?", "I have never used Rust in production"),
    ("Did we deploy the scheduler on Kubernetes?", "we never deploy the scheduler on Kubernetes"),
    ("Have I customized the spaCy pipeline?", "I have never customized the spaCy pipeline"),
    ("Has Nora ever used Rust?", None),  # about someone else: her own lines say "I", not the question's words
    ("What did I use for the scheduler?", None),  # not a yes/no question
])
def test_a_yes_no_question_about_oneself_is_searched_as_its_denial(question: str, query: str | None) -> None:
    assert contradictions.denial_query(question) == query


def test_a_line_holds_a_denial_only_where_its_speaker_denies_something() -> None:
    assert contradictions.is_denial("User <character_6>: I need help with the normal line, especially since I've "
                                    "never solved any tangent or normal line problems before.")
    assert not contradictions.is_denial("User <character_6>: I completed 6 tangent and normal line problems.")
    assert not contradictions.is_denial("User <character_6>: I haven't deployed it yet.")  # a plan, not a denial
    assert not contradictions.is_denial("I have never used Rust.")  # no speaker
