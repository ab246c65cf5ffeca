"""The numbered facts-list loader (FactConsolidation's form): parsing, refusals naming the line, and detection
that never takes a "Speaker: text" transcript for a facts list."""

from __future__ import annotations

from pathlib import Path

import pytest

from m3graph.ingest.chat.facts_list import SPEAKER, FactsMemorizer, load_facts_list
from m3graph.ingest.chat.formats import detect_format, load_conversation
from m3graph.ingest.chat.model import ChatFormatError
from m3graph.ingest.chat.parsing import ReadLimits


def _file(tmp_path: Path, text: str, name: str = "facts.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_list_with_a_header_is_one_session_of_facts_in_line_order(tmp_path: Path) -> None:
    path = _file(tmp_path, "Here is a list of facts:\n0. Ann lives in Oslo.\n\n1.  Bob   plays chess.\n"
                           "7. Ann lives in Bergen.\n")
    conv = load_facts_list(path, "facts-src")
    assert conv.source_id == "facts-src" and conv.speakers == (SPEAKER,)
    (session,) = conv.sessions
    assert session.started_at is None and session.index == 0
    assert [(t.turn_id, t.speaker, t.text) for t in session.turns] == [
        ("F0", SPEAKER, "Ann lives in Oslo."), ("F1", SPEAKER, "Bob plays chess."),
        ("F7", SPEAKER, "Ann lives in Bergen.")]
    assert session.session_key.startswith("sha1:")
    memories = FactsMemorizer().memorize(conv, session)
    assert [(m.kind, m.text, m.source_ids) for m in memories] == [
        ("semantic", "Ann lives in Oslo.", ("F0",)), ("semantic", "Bob plays chess.", ("F1",)),
        ("semantic", "Ann lives in Bergen.", ("F7",))]


def test_the_key_is_the_content_and_a_changed_list_is_another_session(tmp_path: Path) -> None:
    a = load_facts_list(_file(tmp_path, "0. Ann lives in Oslo.\n", "a.txt")).sessions[0].session_key
    same = load_facts_list(_file(tmp_path, "Facts:\n\n0. Ann lives in Oslo.\n", "b.txt")).sessions[0].session_key
    grown = load_facts_list(_file(tmp_path, "0. Ann lives in Oslo.\n1. Ann lives in Bergen.\n", "c.txt"))
    assert a == same != grown.sessions[0].session_key


@pytest.mark.parametrize(("text", "line", "words"), [
    ("Here is a list of facts:\n0. Ann lives in Oslo.\nAnn moved.\n", 3, "expected a numbered fact"),
    ("0. Ann lives in Oslo.\nHeader late:\n1. Bob plays chess.\n", 2, "expected a numbered fact"),
    ("Facts:\nMore facts:\n0. Ann lives in Oslo.\n", 2, "expected a numbered fact"),
    ("0. Ann lives in Oslo.\n2. Bob plays chess.\n2. Bob plays go.\n", 3, "does not follow 2"),
    ("5. Ann lives in Oslo.\n3. Bob plays chess.\n", 2, "does not follow 5"),
    ("0. Ann lives in Oslo.\n1.\n", 2, "expected a numbered fact"),
])
def test_a_bad_line_is_refused_with_its_number(tmp_path: Path, text: str, line: int, words: str) -> None:
    with pytest.raises(ChatFormatError) as err:
        load_facts_list(_file(tmp_path, text))
    assert err.value.line == line and words in str(err.value) and "nothing was written" in str(err.value)


def test_an_empty_list_and_too_many_facts_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ChatFormatError, match="holds no numbered facts"):
        load_facts_list(_file(tmp_path, "Here is a list of facts:\n\n"))
    with pytest.raises(ChatFormatError, match="max_turns") as err:
        load_facts_list(_file(tmp_path, "0. a b.\n1. c d.\n2. e f.\n"), limits=ReadLimits(max_turns=2))
    assert err.value.line == 3


def test_detection_takes_a_numbered_list_and_never_a_transcript(tmp_path: Path) -> None:
    facts = _file(tmp_path, "Here is a list of facts:\n0. Ann lives in Oslo.\n1. Bob plays chess.\n")
    assert detect_format(facts) == "facts"
    assert detect_format(_file(tmp_path, "\n0. Ann lives in Oslo.\n", "bare.txt")) == "facts"
    conv, questions = load_conversation(facts)
    assert [t.turn_id for t in conv.sessions[0].turns] == ["F0", "F1"] and questions == []
    transcripts = {
        "chat.txt": "Ann: I live in Oslo.\nBob: 1. I play chess.\n",
        "header.txt": "Notes:\nAnn: I live in Oslo.\n",
        "mixed.txt": "Facts:\n0. Ann lives in Oslo.\nAnn: and I moved.\n",
        "numbered-speaker.txt": "1: hello there\n2: hi\n",
        "header-only.txt": "Here is a list of facts:\n",
    }
    for name, text in transcripts.items():
        assert detect_format(_file(tmp_path, text, name)) == "text", name
