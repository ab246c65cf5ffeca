"""Relative dates resolved at chat ingestion and stored beside the words, on the real Neo4j: the memory's
`event_*` properties, its unchanged text and search text, the reader's evidence line, a when-answer grounded on
it, re-ingestion and
migration 12's backfill of memories stored before ingestion resolved dates."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from m3graph.embedding import TextEmbedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation
from m3graph.reasoning.control import Controller
from m3graph.reasoning.memory_tools import MemoryTools
from m3graph.schema import apply_migrations
from m3graph.schema.migrations import backfill_event_dates
from tests.helpers.chat_doubles import ScriptedModel
from tests.helpers.graph import rows
from tests.helpers.locomo import locomo_conversation

VIDEO = "when-chat"
# Session 1 on 1 May 2023, session 8 on 8 May 2023 (a Monday): "yesterday" there is Sunday 7 May 2023.
SESSIONS = {
    1: [{"speaker": "Ann", "dia_id": "D1:1", "text": "I start the pottery class next week."},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "Good luck with it!"}],
    8: [{"speaker": "Bob", "dia_id": "D8:1", "text": "I went to the support group yesterday, it was great."},
        {"speaker": "Ann", "dia_id": "D8:2", "text": "That is wonderful to hear."}],
}
NOTES = ("event_said", "event_means", "event_first", "event_last")


def _conversation(tmp_path: Path, source_id: str = VIDEO) -> Conversation:
    return locomo_conversation(tmp_path, source_id, SESSIONS)


def _memories(graph: MemoryGraph, video: str = VIDEO) -> dict[str, dict[str, Any]]:
    found = rows(graph, "MATCH (m:Memory {video_id: $v}) RETURN m.source_ids[0] AS turn, m.text AS text, "
                        "m.event_said AS event_said, m.event_means AS event_means, m.event_first AS event_first, "
                        "m.event_last AS event_last", v=video)
    return {r.pop("turn"): r for r in found}


def _search_texts(graph: MemoryGraph, video: str = VIDEO) -> list[str]:
    return [r["t"] for r in rows(graph, "MATCH (c:Clip {video_id: $v}) RETURN c.search_text AS t "
                                        "ORDER BY c.clip_index", v=video)]


def test_yesterday_is_stored_as_a_date_beside_the_unchanged_words(graph: MemoryGraph, embedder: TextEmbedder,
                                                                   tmp_path: Path) -> None:
    summary = ingest_conversation(graph, _conversation(tmp_path), embedder)
    assert summary.sessions_written == [0, 1]
    mems = _memories(graph)
    went = mems["D8:1"]
    assert went["text"].endswith(": I went to the support group yesterday, it was great.")  # what was said
    assert "[=" not in went["text"] and "2023" not in went["text"]
    assert (went["event_said"], went["event_means"], went["event_first"], went["event_last"]) == (
        ["yesterday"], ["7 May 2023"], ["2023-05-07"], ["2023-05-07"])
    # "next week" said on Monday 1 May 2023 is the week of 8 May, named from the day it was said; a turn without
    # a time expression stores nothing.
    assert (mems["D1:1"]["event_means"], mems["D1:1"]["event_first"], mems["D1:1"]["event_last"]) == (
        ["the week after 1 May 2023"], ["2023-05-08"], ["2023-05-14"])
    assert all(mems[t][k] is None for t in ("D1:2", "D8:2") for k in NOTES)

    # The search documents hold the words only (the notes measured as a loss there); Cypher filters on ISO days.
    texts = _search_texts(graph)
    assert "it was great.\n" in texts[1] and "[=" not in "".join(texts)
    on_7th = rows(graph, "MATCH (m:Memory {video_id: $v}) "
                         "WHERE any(i IN range(0, size(coalesce(m.event_first, [])) - 1) "
                         "WHERE m.event_first[i] <= $day AND m.event_last[i] >= $day) RETURN m.source_ids AS ids",
                  v=VIDEO, day="2023-05-07")
    assert [r["ids"] for r in on_7th] == [["D8:1"]]


def test_the_reader_sees_the_date_after_the_words(graph: MemoryGraph, embedder: TextEmbedder,
                                                  tmp_path: Path) -> None:
    ingest_conversation(graph, _conversation(tmp_path), embedder)
    tools = MemoryTools(graph.search, embedder, graph.settings, [VIDEO])
    lines = tools.fetch_clip("CLIP_1").knowledge["CLIP_1"]
    assert any(line.endswith(": I went to the support group yesterday [= 7 May 2023], it was great.")
               and "<character_" in line for line in lines), lines
    assert "That is wonderful to hear." in lines[1]  # a line without a time expression is shown as it is
    found = tools.search_node("support group")
    assert any("yesterday [= 7 May 2023]" in line for line in found.knowledge.get("CLIP_1", [])), found.knowledge
    # The stored text is untouched by what the reader is shown.
    assert "[=" not in _memories(graph)["D8:1"]["text"]


def test_a_when_answer_in_words_is_given_as_the_date_its_line_resolved(graph: MemoryGraph,
                                                                      embedder: TextEmbedder,
                                                                      tmp_path: Path) -> None:
    """The reader answers "Yesterday" from "... yesterday [= 7 May 2023] ...": the controller gives the date the
    shown line resolved it to, and says so in the round's note (m3graph/reasoning/grounding.py)."""
    ingest_conversation(graph, _conversation(tmp_path), embedder)
    model = ScriptedModel(['{"answer": "Yesterday", "next_query": null}'])
    ctl = Controller(model, graph, embedder, graph.settings, mode="tools", rounds=2, prefetch=True)
    trace = ctl.answer("When did Bob go to the support group?", [VIDEO])
    assert trace.answer == "7 May 2023"
    assert trace.rounds[-1].note == ("the reader's 'Yesterday' with 'Yesterday' as '7 May 2023', as the shown "
                                     "lines resolve it")
    # Not a when-question: the reader's words stand.
    model = ScriptedModel(['{"answer": "Yesterday", "next_query": null}'])
    ctl = Controller(model, graph, embedder, graph.settings, mode="tools", rounds=2, prefetch=True)
    assert ctl.answer("Did Bob go to the support group?", [VIDEO]).answer == "Yesterday"


def test_reingestion_changes_nothing_and_undated_sessions_store_no_dates(graph: MemoryGraph,
                                                                         embedder: TextEmbedder,
                                                                         tmp_path: Path) -> None:
    conv = _conversation(tmp_path)
    ingest_conversation(graph, conv, embedder)
    before, texts = _memories(graph), _search_texts(graph)
    again = ingest_conversation(graph, conv, embedder)
    assert again.sessions_written == [] and again.sessions_skipped == 2
    assert _memories(graph) == before and _search_texts(graph) == texts

    undated = _conversation(tmp_path, "when-undated")
    undated = replace(undated, sessions=tuple(replace(s, started_at=None) for s in undated.sessions))
    ingest_conversation(graph, undated, embedder)
    mems = _memories(graph, "when-undated")
    assert "yesterday" in mems["D8:1"]["text"]
    assert all(m[k] is None for m in mems.values() for k in NOTES)


def _forget_notes(graph: MemoryGraph) -> None:
    """The graph as chat ingestion wrote it before migration 12: no notes."""
    rows(graph, "MATCH (m:Memory) REMOVE m.event_said, m.event_means, m.event_first, m.event_last")


def test_migration_11_backfills_stored_chat_memories_idempotently(graph: MemoryGraph, embedder: TextEmbedder,
                                                                   tmp_path: Path) -> None:
    ingest_conversation(graph, _conversation(tmp_path), embedder)
    undated = _conversation(tmp_path, "when-undated")
    ingest_conversation(graph, replace(undated, sessions=tuple(replace(s, started_at=None)
                                                                  for s in undated.sessions)), embedder)
    written, texts = _memories(graph), _search_texts(graph)
    assert written["D8:1"]["event_first"] == ["2023-05-07"]

    _forget_notes(graph)
    assert all(m[k] is None for m in _memories(graph).values() for k in NOTES)

    # Pages of 3 memories over 8: the cursor crosses pages, dated and undated sessions alike.
    assert backfill_event_dates(graph.ex, batch=3) == 2  # "next week" and "yesterday"
    assert _memories(graph) == written and _search_texts(graph) == texts
    assert all(m[k] is None for m in _memories(graph, "when-undated").values() for k in NOTES)
    assert backfill_event_dates(graph.ex, batch=3) == 2  # a second run sets the same values
    assert _memories(graph) == written and _search_texts(graph) == texts

    # As a numbered migration: forgotten, it runs again on the next apply and is recorded once.
    _forget_notes(graph)
    rows(graph, "MATCH (m:Migration {version: 12}) DELETE m")
    assert apply_migrations(graph.ex, graph.settings) == [12]
    assert _memories(graph) == written and _search_texts(graph) == texts
    assert apply_migrations(graph.ex, graph.settings) == []


def test_migration_16_renames_relative_weeks_by_the_day_they_were_said(graph: MemoryGraph, embedder: TextEmbedder,
                                                                      tmp_path: Path) -> None:
    """Notes written when "next week" was named by its Monday are rendered again; nothing else changes."""
    ingest_conversation(graph, _conversation(tmp_path), embedder)
    written = _memories(graph)
    rows(graph, "MATCH (m:Memory {video_id: $v}) WHERE m.event_means = ['the week after 1 May 2023'] "
                "SET m.event_means = ['the week of 8 May 2023']", v=VIDEO)
    assert _memories(graph)["D1:1"]["event_means"] == ["the week of 8 May 2023"]
    rows(graph, "MATCH (m:Migration {version: 16}) DELETE m")
    assert apply_migrations(graph.ex, graph.settings) == [16]
    assert _memories(graph) == written
    assert apply_migrations(graph.ex, graph.settings) == []
