"""Updates said in other words (`m3graph.speech_statements`): a paraphrased update lands in the earlier slot."""

from __future__ import annotations

import pytest

from m3graph.devkit.eval.statements import SPEECH_SAMPLE, _load, measure_speech
from m3graph.speech_statements import CONTEXT_METRICS, SpeechContext, read_turn
from m3graph.statements import parse_statement


def _turns(*texts: str, speaker: str = "Nora") -> list[list[tuple[str, str, bool]]]:
    """Each turn's (slot key, value, changed), the turns of one session sharing one context."""
    context = SpeechContext()
    return [[(s.statement.slot_key, s.statement.value, s.statement.changed)
             for s in read_turn(t, speaker, "Bob", context)] for t in texts]


@pytest.mark.parametrize(("first", "update", "slot", "old", "new"), [
    ("I live in Lisbon.", "We moved to Porto last month.", "nora · live in", "Lisbon", "Porto"),
    ("I live in Lisbon.", "We're now living in Porto.", "nora · live in", "Lisbon", "Porto"),
    ("My manager is Ana.", "Ana left, Ben manages me now.", "nora · manager", "Ana", "Ben"),
    ("My manager is Ana.", "Ben is my manager now.", "nora · manager", "Ana", "Ben"),
    ("The latency is 400 ms.", "It's now down to 250 ms.", "nora · latency", "400 ms", "250 ms"),
    ("The dashboard API's average response time is 400 ms.", "The API responds in about 250 ms now.",
     "nora · dashboard api average response time", "400 ms", "250 ms"),
    ("My pool size is 10.", "I've increased the pool size from 10 to 30.", "nora · pool size", "10", "30"),
    ("Redis memory usage is 150MB.", "Redis memory usage has now reached 200MB with 15,000 keys.",
     "nora · redis memory usage", "150 MB", "200 MB"),
    ("Test coverage is at 80%.", "I added tests, which brings my test coverage to 88%.", "nora · test coverage",
     "80%", "88%"),
])
def test_an_update_in_other_words_lands_in_the_earlier_slot(first: str, update: str, slot: str, old: str,
                                                            new: str) -> None:
    before, after = _turns(first, update)
    assert before == [(slot, old, False)]
    assert after == [(slot, new, True)]  # marked as a change: the walk retires the old value


def test_values_compare_as_numbers_with_folded_units() -> None:
    said = _turns("The latency is 400ms.", "The latency is 400 milliseconds.", "The key count is 1,000.")
    assert [t[0][1] for t in said] == ["400 ms", "400 ms", "1000"]  # a restatement, not an update


def test_a_pronoun_binds_only_to_a_metric_of_the_same_unit_family() -> None:
    assert _turns("My test coverage is 80%.", "It's now down to 250 ms.")[1] == []  # no time metric stated
    assert _turns("It's now down to 250 ms.") == [[]]  # nothing to bind to
    assert _turns("The latency is 400 ms.", "My coverage is 80%.", "It's now 300 ms.")[2] == [
        ("nora · latency", "300 ms", True)]


def test_a_paraphrase_binds_only_when_every_word_is_in_the_earlier_metric() -> None:
    a, b = _turns("The login API response time is 180ms.", "The dashboard API response time is 300ms.")
    assert a[0][0] != b[0][0]  # two APIs: two slots, never merged on shared words


def test_the_context_is_bounded() -> None:
    context = SpeechContext()
    for i in range(CONTEXT_METRICS + 3):
        context.remember("Nora", f"metric{i}", "time")
    assert len(context.metrics["Nora"]) == CONTEXT_METRICS and context.latest("Nora", "time") == (
        f"metric{CONTEXT_METRICS + 2}")


@pytest.mark.parametrize("text", [
    "I reduced the latency by 20%.",  # a change, not the value
    "I'm trying to handle peaks by increasing the connection pool size to 25 connections.",  # meant, not done
    "I want to get the latency down to 100 ms.",
    "It's been moved to February 22, 2024.",  # a date, not a measurement
    "The deadline has moved to 22 February.",
    "We use Postgres now.",  # a group, not the speaker (only a move is read for "we")
    "I've set the token to expire in 1 hour.",  # "has set": an event, not a possession
])
def test_what_is_not_an_update_stays_free_text(text: str) -> None:
    assert _turns(text) == [[]]


def test_each_derived_sentence_reads_back_as_its_statement() -> None:
    context = SpeechContext()
    for text in ("The latency is 400 ms.", "It's now down to 250 ms.", "Ben manages me now.",
                 "I'm using Wireshark v4.0.7 and Socket.io v4.6.1."):
        for said in read_turn(text, "Nora", "Bob", context):
            assert parse_statement(said.sentence) == said.statement


def test_two_things_used_are_two_slots() -> None:
    assert _turns("I'm using Wireshark v4.0.7 and Socket.io v4.6.1.") == [[
        ("nora · use · wireshark v4.0.7", "Wireshark v4.0.7", False),
        ("nora · use · socket.io v4.6.1", "Socket.io v4.6.1", False)]]


def test_the_update_sample_has_a_tuned_and_a_held_out_part() -> None:
    rows = [r for r in _load(SPEECH_SAMPLE) if str(r["split"]).startswith("update-")]
    assert {str(r["split"]) for r in rows} == {"update-dev", "update-seen", "update-held"}
    assert len(rows) == 120 and all(str(r["source"]).startswith("beam-500K-") for r in rows)
    tuned = measure_speech(rows, "update-dev")
    assert tuned.expected == 16 and tuned.wrong_slot + tuned.false_parse == 0 and tuned.parsed >= 9
