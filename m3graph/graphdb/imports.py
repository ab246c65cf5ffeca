"""Writing an imported memory graph (a research-code VideoGraph pickle) as ONE transaction: all or nothing.

The importer (m3graph/ingest/m3_import.py) parses, renumbers and embeds; this module is the only writer of
what it produced, so the import's write has one implementation behind `MemoryGraph.write_import`. Imported
clips are complete (they arrive with their memories), so they are marked `memorized` with the write. Imported
statements get slots and versions by the same rules as memorized ones (`m3graph.fact_versions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from m3graph.errors import InvalidInputError
from m3graph.fact_versions import slot_properties
from m3graph.graphdb.characters import refresh_characters
from m3graph.graphdb.clip_state import ClipState, set_states_tx
from m3graph.graphdb.executor import Tx
from m3graph.graphdb.facts import refresh_slots
from m3graph.graphdb.types import ClipInfo, clip_key
from m3graph.settings import Settings

WRITE_BATCH = 1000  # rows per UNWIND inside the one import transaction


class VideoExistsError(InvalidInputError):
    """The video id is already in the graph; import with ``replace=True`` to delete and re-import it."""


@dataclass(frozen=True)
class ImportRows:
    """Everything one import writes, as query rows (built by the importer)."""

    source_id: str
    source: str
    format: str
    clips: Sequence[ClipInfo]
    faces: Sequence[dict[str, Any]]
    voices: Sequence[dict[str, Any]]
    memories: Sequence[dict[str, Any]]
    votes: Sequence[dict[str, Any]]
    entity_ids: Sequence[int]


def _batches(rows: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [list(rows[i:i + WRITE_BATCH]) for i in range(0, len(rows), WRITE_BATCH)]


def write_import_tx(tx: Tx, settings: Settings, rows: ImportRows) -> None:
    source_id = rows.source_id
    tx.run("graph/lock", name=f"memory:{source_id}")
    if tx.run("graph/video_exists", source_id=source_id):
        raise VideoExistsError(f"video {source_id} was created while it was being imported; nothing was written")
    for batch in _batches([c.upsert_params(source_id) for c in rows.clips]):
        tx.run("graph/upsert_clip", clips=batch)
        set_states_tx(tx, [(r["source_id"], r["clip_index"]) for r in batch], ClipState.MEMORIZED,
                      f"imported from {rows.source}")
    if rows.clips:
        tx.run("import/video", source_id=source_id, source=rows.source, format=rows.format)
    for batch in _batches(rows.faces):
        tx.run("import/faces", source_id=source_id, entities=batch)
    for batch in _batches(rows.voices):
        tx.run("import/voices", source_id=source_id, entities=batch)
    memories = [r | slot_properties(source_id, r["kind"], r["text"], r["is_equivalence"]) for r in rows.memories]
    for batch in _batches(memories):
        tx.run("import/memories", source_id=source_id, rows=batch)
    facts = [r | {"source_id": source_id} for r in memories if r["slot_key"]]
    for batch in _batches(facts):
        tx.run("facts/link_things", rows=batch)
    refresh_slots(tx, source_id, [r["slot_key"] for r in facts], prune=False)
    for batch in _batches([{"key": clip_key(source_id, c.clip_index)} for c in rows.clips]):
        tx.run("clip/refresh_search_text", clip_keys=[r["key"] for r in batch])
    for batch in _batches(rows.votes):
        tx.run("import/votes", votes=batch)
    if rows.entity_ids:
        refresh_characters(tx, settings, list(rows.entity_ids))
