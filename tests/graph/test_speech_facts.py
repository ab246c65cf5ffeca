"""Statements from speech through `m3graph ingest-chat` (no model) into the real Neo4j: a speaker's first-person
statements, second person and pronouns become versioned slots about that speaker; a negated and a positive
statement about one thing contradict in either order; re-ingesting changes nothing; deleting a session retracts
what it derived."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from m3graph.cli import main
from m3graph.graphdb.store import MemoryGraph
from m3graph.settings import Settings
from tests.helpers.graph import rows

CHAT = """--- 2025-01-10T09:00:00Z
Nora: Hi Bob! I live in Lisbon and my manager is Ana.
Bob: Nice. You work at Farfetch, right?
Nora: Yes, I work at Farfetch. My sister moved to Berlin. She works at Zalando.
Bob: We switched to Postgres. If I get the job I would move to Madrid.
--- 2025-06-01T09:00:00Z
Nora: Guess what, I moved to Porto last month!
Bob: You have two kids now, right.
"""


def _speech(graph: MemoryGraph, on: bool = True) -> Settings:
    """The session's settings with statements from speech switched on (`chat.speech_facts`, off by default)."""
    return graph.settings.model_copy(update={"chat": graph.settings.chat.model_copy(update={"speech_facts": on})})


def _ingest(graph: MemoryGraph, path: Path, source: str, speech: bool = True) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["ingest-chat", str(path), "--source-id", source, "--format", "text",
                                       "--json"], obj=_speech(graph, speech))
    assert result.exit_code == 0, result.output
    (summary,) = json.loads(result.output)
    return summary


def _slots(graph: MemoryGraph, source: str) -> dict[str, list[tuple[str, bool, bool]]]:
    """slot key -> (value, negated, current) of every derived fact, oldest first (not the speakers' own names)."""
    out: dict[str, list[tuple[str, bool, bool]]] = {}
    for r in rows(graph, "MATCH (m:Memory {video_id: $v}) WHERE m.slot_key IS NOT NULL "
                         "AND NOT (m.slot_key ENDS WITH ' · name' AND m.slot_value = m.slot_subject) "
                         "RETURN m.slot_key AS k, "
                         "m.slot_value AS v, m.negated AS n, m.current AS c ORDER BY m.valid_from_order[0], "
                         "m.memory_id", v=source):
        out.setdefault(r["k"], []).append((r["v"], r["n"], r["c"]))
    return out


def _state(graph: MemoryGraph, source: str) -> Any:
    return graph.counts(source), rows(graph, "MATCH (m:Memory {video_id: $v}) OPTIONAL MATCH (m)-[e]->(o:Memory) "
                                             "RETURN m.memory_id AS id, m.text AS t, m.current AS c, type(e) AS e, "
                                             "o.memory_id AS o ORDER BY id, e, o", v=source)


def test_a_speakers_statements_become_versioned_slots_about_them(graph: MemoryGraph, tmp_path: Path) -> None:
    path = tmp_path / "nora.txt"
    path.write_text(CHAT, encoding="utf-8")
    summary = _ingest(graph, path, "chat-nora")
    assert summary["sessions_written"] == [0, 1] and summary["turns"] == 6
    assert _slots(graph, "chat-nora") == {
        "nora · live in": [("Lisbon", False, False), ("Porto", False, True)],  # the move retires Lisbon
        "nora · manager": [("Ana", False, True)],
        "nora · employed by": [("Farfetch", False, True)],  # Bob's question is not read; Nora's answer is
        "nora's sister · live in": [("Berlin", False, True)],
        "nora's sister · employed by": [("Zalando", False, True)],  # "She" is the sister, the last named subject
        "nora · have · two kid": [("two kids", False, True)],  # "you", said to the only other speaker
    }  # "we ..." and the hypothetical move are not read
    texts = {r["t"] for r in rows(graph, "MATCH (m:Memory {video_id: 'chat-nora', kind: 'semantic'}) "
                                         "RETURN m.text AS t")}
    nora = rows(graph, "MATCH (s:Speaker {speaker_name: 'Nora'}) RETURN s.entity_id AS id")[0]["id"]
    assert f"Nora <speaker_{nora}> moved to Porto." in texts  # the speaker's tag: MENTIONS, the character
    assert f"Nora <speaker_{nora}>'s sister works at Zalando." in texts
    old = rows(graph, "MATCH (n:Memory {slot_value: 'Porto'})-[:SUPERSEDES]->(o:Memory) RETURN o.slot_value AS v")
    assert old == [{"v": "Lisbon"}]

    out = CliRunner().invoke(main, ["history", "chat-nora", "Nora"], obj=graph.settings, catch_exceptions=False)
    assert out.exit_code == 0 and "Porto" in out.output and "Lisbon" in out.output and "Ana" in out.output, out.output

    before = _state(graph, "chat-nora")  # re-ingesting the same chat writes nothing
    again = _ingest(graph, path, "chat-nora")
    assert again["sessions_written"] == [] and _state(graph, "chat-nora") == before

    graph.delete_clip("chat-nora", 1)  # the session with the move: its facts go, Lisbon holds again
    slots = _slots(graph, "chat-nora")
    assert slots["nora · live in"] == [("Lisbon", False, True)] and "nora · have · two kid" not in slots


def test_a_negated_and_a_positive_statement_contradict_in_either_order(graph: MemoryGraph, tmp_path: Path) -> None:
    never, daily = "Nora: I have never used Rust.\n", "Nora: I use Rust every day.\n"
    for source, first, second in (("chat-rust-a", never, daily), ("chat-rust-b", daily, never)):
        path = tmp_path / f"{source}.txt"
        path.write_text(f"--- 2025-01-10T09:00:00Z\n{first}Ana: Cool.\n--- 2025-03-10T09:00:00Z\n{second}",
                        encoding="utf-8")
        _ingest(graph, path, source)
        slots = _slots(graph, source)
        assert sorted(slots["nora · use · rust"]) == [("Rust", False, True), ("Rust", True, True)], slots
        edges = rows(graph, "MATCH (a:Memory {video_id: $v})-[:CONTRADICTS]-(b:Memory) RETURN count(*) AS n",
                     v=source)
        assert edges == [{"n": 2}]  # one edge, seen from both ends; neither is picked silently


def test_a_change_word_makes_the_flip_an_update(graph: MemoryGraph, tmp_path: Path) -> None:
    path = tmp_path / "tea.txt"
    path.write_text("--- 2025-01-10T09:00:00Z\nNora: I like tea.\nAna: Ok.\n--- 2025-03-10T09:00:00Z\n"
                    "Nora: I don't like tea anymore.\n", encoding="utf-8")
    _ingest(graph, path, "chat-tea")
    assert _slots(graph, "chat-tea") == {"nora · like · tea": [("tea", False, False), ("tea", True, True)]}


def test_by_default_a_chat_derives_no_facts_from_speech(graph: MemoryGraph, tmp_path: Path) -> None:
    path = tmp_path / "nora.txt"
    path.write_text(CHAT, encoding="utf-8")
    summary = _ingest(graph, path, "chat-nora-off", speech=False)
    assert summary["turns"] == 6
    assert _slots(graph, "chat-nora-off") == {}
