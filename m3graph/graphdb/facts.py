"""Recomputing the versions of slots inside a write transaction (the rules: `m3graph.fact_versions`).

Called by every write that can change a slot's history: a clip's memories (`memories.write_clip_memories`), a
deleted clip or character (`deletion`). Reads the slots' assertions, walks each slot, writes the versions and
drops named things no fact refers to any more, all in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from m3graph.fact_versions import version_rows
from m3graph.graphdb.executor import Tx


def refresh_slots(tx: Tx, video_id: str, slot_keys: Sequence[str | None]) -> int:
    """Recomputes these slots of one source from the graph; returns how many memories it set."""
    keys = sorted({k for k in slot_keys if k})
    if not keys:
        return 0
    rows = version_rows(tx.run("facts/slot_assertions", video_id=video_id, slot_keys=keys))
    if rows:
        tx.run("facts/set_versions", rows=rows)
    tx.run("facts/orphan_things", video_id=video_id)
    return len(rows)
