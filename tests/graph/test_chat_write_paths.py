"""The chat session write path of issue 40 (fewer statements per session) writes the very graph the earlier path
wrote (bench/session_writes.py keeps the earlier one as the benchmark's baseline): every node, relationship and
property but the write times, on a chat with new and returning speakers, speech statements and a re-ingestion that
writes nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bench.session_writes import earlier_writes
from m3graph.embedding import TextEmbedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation, Session, Turn
from tests.helpers.graph import MARKER_LABEL, variant, wipe, with_settings

SESSIONS = [[("Ann", "I moved to Porto last month."), ("Bob", "How is the new flat?"),
             ("Ann", "The latency of our service is 400 ms.")],
            [("Bob", "I adopted a puppy called Pixel yesterday."), ("Ann", "It's now down to 250 ms."),
             ("Cleo", "Hi both, Cleo here.")],
            [("Ann", "I moved to Lisbon."), ("Bob", "Pixel chewed my notebook.")]]
# Written at commit time, not derived from the chat: left out of the comparison.
CLOCK = {"created_at", "touched_at", "state_at", "updated_at", "at"}


def _conv(source: str, sessions: list[list[tuple[str, str]]]) -> Conversation:
    out = tuple(Session(index=i, started_at=datetime(2023, 5, i + 1, tzinfo=UTC),
                        turns=tuple(Turn(turn_id=f"D{i + 1}:{j + 1}", speaker=who, text=text)
                                    for j, (who, text) in enumerate(turns)))
                for i, turns in enumerate(sessions))
    return Conversation(source_id=source, sessions=out, speakers=("Ann", "Bob", "Cleo"))


def _value(v: Any) -> Any:
    return v.iso_format() if hasattr(v, "iso_format") else v


def _dump(graph: MemoryGraph) -> tuple[list[str], list[str]]:
    """Every node and relationship but the suite's own, as sorted canonical JSON (a node by its properties)."""
    with graph.ex.session() as session:
        nodes = session.run(f"MATCH (n) WHERE NOT n:Migration AND NOT n:{MARKER_LABEL} "
                            "RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props").data()
        rels = session.run("MATCH (a)-[r]->(b) RETURN elementId(a) AS a, type(r) AS type, properties(r) AS props, "
                           "elementId(b) AS b").data()

    def canon(props: dict[str, Any]) -> dict[str, Any]:
        return {k: _value(v) for k, v in sorted(props.items()) if k not in CLOCK}

    key = {n["id"]: json.dumps([sorted(n["labels"]), canon(n["props"])], sort_keys=True, default=str)
           for n in nodes}
    return (sorted(key.values()),
            sorted(json.dumps([key.get(r["a"]), r["type"], canon(r["props"]), key.get(r["b"])], sort_keys=True,
                              default=str) for r in rels))


def _ingest_twice(graph: MemoryGraph, embedder: TextEmbedder) -> tuple[list[int], list[int]]:
    first = ingest_conversation(graph, _conv("paths", SESSIONS[:2]), embedder, embed_ahead=False)
    grown = ingest_conversation(graph, _conv("paths", SESSIONS), embedder, embed_ahead=False)  # appends one
    return first.sessions_written, grown.sessions_written


def test_current_session_writes_store_the_graph_of_the_earlier_path_and_rewrite_nothing(
        graph: MemoryGraph, embedder: TextEmbedder) -> None:
    graph = with_settings(graph, variant(graph.settings, chat={"speech_facts": True}))
    with earlier_writes():
        assert _ingest_twice(graph, embedder) == ([0, 1], [2])
    earlier = _dump(graph)
    wipe(graph)  # counters too: the current path allocates the same ids
    assert _ingest_twice(graph, embedder) == ([0, 1], [2])
    current = _dump(graph)
    assert len(current[0]) > 20 and any('"SPEAKS_IN"' in r for r in current[1])
    assert any('"semantic"' in n for n in current[0])  # speech statements were derived and written
    assert current == earlier
    again = ingest_conversation(graph, _conv("paths", SESSIONS), embedder, embed_ahead=False)
    assert again.sessions_written == [] and again.sessions_skipped == 3
    assert _dump(graph) == current
