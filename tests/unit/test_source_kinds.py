"""The rule that names a source's kind (migration 17's backfill; chat/write_session.cypher states it again)."""

from __future__ import annotations

from m3graph.cypher import query
from m3graph.ingest.chat.facts_list import SPEAKER
from m3graph.schema.sources import FACTS_SPEAKER, SOURCE_KINDS, source_kind


def test_kinds() -> None:
    assert source_kind(notes=False, sessions=0, speakers=[]) == "video"
    assert source_kind(notes=False, sessions=2, speakers=["Ann", "Bob"]) == "conversation"
    assert source_kind(notes=False, sessions=1, speakers=[FACTS_SPEAKER]) == "facts"
    assert source_kind(notes=False, sessions=2, speakers=[FACTS_SPEAKER, "Ann"]) == "conversation"
    assert source_kind(notes=True, sessions=1, speakers=["agent"]) == "notes"
    assert source_kind(notes=True, sessions=0, speakers=[]) == "notes"
    assert set(SOURCE_KINDS) == {"video", "conversation", "facts", "notes"}


def test_the_facts_speaker_is_the_facts_lists_and_the_write_paths() -> None:
    """Three places name the facts list's speaker: the loader, the backfill and the session write."""
    assert FACTS_SPEAKER == SPEAKER
    assert f"sp.as_name = '{FACTS_SPEAKER}'" in query("chat/write_session").text


def test_every_write_that_creates_a_source_names_it() -> None:
    for name in ("graph/upsert_clip", "notes/claim_source"):
        text = query(name).text
        assert "MERGE (v:Video" in text and "v:Source" in text and "v.source_id" in text and "v.kind" in text, name
