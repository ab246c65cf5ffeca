"""Migration 17: sources are `Source` nodes with a `kind` and a `source_id`, not only `Video`s (issue 35).

Why: a conversation was a `Video` node keyed by `video_id`, so a reader of the graph (or of the code) could not
tell a chat from a film. Every source node now also carries the `Source` label, `source_id` (equal to its
`video_id`) and `kind`, one of `SOURCE_KINDS`. `Video` and `video_id` stay on every source node during the
deprecation window (docs/graph-model.md "Sources"): the queries that read them keep working.

The write paths set the three themselves (graph/upsert_clip: a new source is a video until a session says
otherwise; chat/write_session: a conversation, a facts list or a notes source; notes/claim_source: a notes source).
This module names a source written before them, from what the graph holds, by the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from m3graph.schema.pages import BACKFILL_BATCH, pages

SourceKind = Literal["video", "conversation", "facts", "notes"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("video", "conversation", "facts", "notes")
# The one speaker of a numbered facts list (m3graph/ingest/chat/facts_list.py SPEAKER; a unit test keeps them equal).
FACTS_SPEAKER = "Facts"


class _Executor(Protocol):
    def read(self, name: str, /, **params: Any) -> list[dict[str, Any]]: ...

    def write(self, name: str, /, **params: Any) -> list[dict[str, Any]]: ...


def source_kind(notes: bool, sessions: int, speakers: Sequence[str]) -> SourceKind:
    """What a source is, from what the graph holds: a notes source is marked (`agent_notes`); a source with
    conversation sessions is a facts list when its only speaker is the facts list's, else a conversation; the rest
    (clips cut from media, imported video memories) are videos."""
    if notes:
        return "notes"
    if sessions == 0:
        return "video"
    if set(speakers) == {FACTS_SPEAKER}:
        return "facts"
    return "conversation"


def backfill_sources(executor: _Executor, batch: int = BACKFILL_BATCH) -> int:
    """Labels, keys and kinds for the sources written before them, a page of `batch` at a time (one UNWIND write
    per page). A kind a write path already set is kept; a source that already has all three is not written again,
    so a second run changes nothing. Returns the number of sources it changed."""
    changed = 0
    for page in pages(executor, "schema/source_page", "video_id", batch):
        rows = []
        for r in page:
            kind = r["kind"] or source_kind(r["notes"], r["sessions"], r["speakers"])
            if not (r["labelled"] and r["source_id"] == r["video_id"] and r["kind"] == kind):
                rows.append({"video_id": r["video_id"], "kind": kind})
        if rows:
            executor.write("schema/set_sources", rows=rows)
            changed += len(rows)
    return changed


__all__ = ["FACTS_SPEAKER", "SOURCE_KINDS", "SourceKind", "backfill_sources", "source_kind"]
