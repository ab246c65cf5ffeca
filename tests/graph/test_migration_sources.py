"""Migration 17 on the real Neo4j: every source is a `Source` with a `kind` and a `source_id` (issue 35).

New writes carry them on every path that creates a source (a video's clips, a conversation, a numbered facts list,
an agent's notes source), and a graph written before the migration gets them from its backfill: applied twice, the
second run changes nothing. `Video`/`video_id` stay on every source node (the deprecation window)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from neo4j.exceptions import ConstraintError

from m3graph.embedding import TextEmbedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.facts_list import FactsMemorizer, load_facts_list
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.schema import apply_migrations
from m3graph.schema.sources import backfill_sources
from m3graph.service.notes import claim_notes_source
from tests.helpers.graph import add_clip, rows
from tests.helpers.locomo import locomo_conversation

TURNS = {1: [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat called Mochi."},
             {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely, what colour is Mochi?"}]}
EXPECTED = {"src-film": "video", "src-chat": "conversation", "src-facts": "facts", "src-notes": "notes"}


def _sources(graph: MemoryGraph) -> dict[str, dict[str, Any]]:
    found = rows(graph, "MATCH (v:Video) RETURN v.video_id AS video_id, v:Source AS source, v.source_id AS source_id,"
                        " v.kind AS kind, v:Video AS video ORDER BY video_id")
    return {r.pop("video_id"): r for r in found}


def _write_one_of_each(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> None:
    """A source of every kind, each through its own product write path."""
    add_clip(graph, "src-film", 0)
    add_clip(graph, "src-film", 1)
    ingest_conversation(graph, locomo_conversation(tmp_path, "src-chat", TURNS), embedder)
    facts = tmp_path / "facts.txt"
    facts.write_text("Here is a list of facts:\n0. Ann lives in Oslo.\n1. Ann lives in Bergen.\n", encoding="utf-8")
    ingest_conversation(graph, load_facts_list(facts, "src-facts"), embedder, FactsMemorizer())
    assert claim_notes_source(graph, "src-notes") == "src-notes"
    ingest_conversation(graph, locomo_conversation(tmp_path, "src-notes", TURNS), embedder)


def test_new_writes_carry_source_kind_and_id(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> None:
    _write_one_of_each(graph, embedder, tmp_path)
    found = _sources(graph)
    assert {v: r["kind"] for v, r in found.items()} == EXPECTED
    assert all(r["source"] and r["video"] and r["source_id"] == v for v, r in found.items()), found
    # a later session keeps the kind; a facts source given a conversation's session becomes a conversation
    ingest_conversation(graph, locomo_conversation(tmp_path, "src-chat", {2: TURNS[1]}), embedder)
    add_clip(graph, "src-film", 2)
    assert {v: r["kind"] for v, r in _sources(graph).items()} == EXPECTED
    ingest_conversation(graph, locomo_conversation(tmp_path, "src-facts", {3: TURNS[1]}), embedder)
    assert _sources(graph)["src-facts"]["kind"] == "conversation"


def test_a_new_notes_source_is_one_before_its_first_note(graph: MemoryGraph) -> None:
    claim_notes_source(graph, "src-empty-notes")
    assert _sources(graph)["src-empty-notes"] == {"source": True, "source_id": "src-empty-notes", "kind": "notes",
                                                 "video": True}


def test_migration_17_names_the_sources_of_a_graph_written_before_it(graph: MemoryGraph, embedder: TextEmbedder,
                                                                     tmp_path: Path) -> None:
    _write_one_of_each(graph, embedder, tmp_path)
    written = _sources(graph)
    # The graph as it was before migration 17: sources are Videos only.
    rows(graph, "MATCH (v:Video) REMOVE v:Source, v.source_id, v.kind")
    assert all(not r["source"] and r["source_id"] is None and r["kind"] is None for r in _sources(graph).values())

    # Pages of 3 over 4 sources: the cursor crosses a page; a second run finds nothing to change.
    assert backfill_sources(graph.ex, batch=3) == 4
    assert _sources(graph) == written
    assert backfill_sources(graph.ex, batch=3) == 0
    assert _sources(graph) == written

    # As a numbered migration: forgotten, it runs again on the next apply, is recorded once, then is a no-op.
    rows(graph, "MATCH (v:Video) REMOVE v:Source, v.source_id, v.kind")
    rows(graph, "MATCH (m:Migration {version: 17}) DELETE m")
    assert apply_migrations(graph.ex, graph.settings) == [17]
    assert _sources(graph) == written
    assert apply_migrations(graph.ex, graph.settings) == []
    assert rows(graph, "MATCH (m:Migration {version: 17}) RETURN count(m) AS n")[0]["n"] == 1


def test_a_kind_a_write_path_set_is_kept_by_the_backfill(graph: MemoryGraph) -> None:
    """A source half-named (a label missing, its kind set) is completed without its kind being guessed again."""
    add_clip(graph, "src-half", 0)
    rows(graph, "MATCH (v:Video {video_id: 'src-half'}) REMOVE v:Source SET v.kind = 'conversation'")
    assert backfill_sources(graph.ex) == 1
    assert _sources(graph)["src-half"] == {"source": True, "source_id": "src-half", "kind": "conversation",
                                           "video": True}


def test_source_id_is_unique_and_kind_indexed(graph: MemoryGraph) -> None:
    constraints = {r["name"]: r for r in graph.ex.read("schema/list_constraints")}
    assert constraints["source_key"]["labels"] == ["Source"]
    assert constraints["source_key"]["properties"] == ["source_id"]
    indexes = {r["name"]: r for r in graph.ex.read("schema/list_indexes")}
    assert indexes["source_kind"]["labels"] == ["Source"] and indexes["source_kind"]["properties"] == ["kind"]
    add_clip(graph, "src-one", 0)
    with pytest.raises(ConstraintError):
        rows(graph, "CREATE (:Source {source_id: 'src-one', kind: 'video'})")
