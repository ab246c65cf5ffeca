"""Versions of slots inside a write transaction, and the reads of facts (the rules: `m3graph.fact_versions`).

`refresh_slots` is called by every write that can change a slot's history: a clip's memories
(`memories.write_clip_memories`), a deleted clip or character (`deletion`). It reads the slots' assertions,
walks each slot, writes the versions, drops named things no fact refers to any more and, where a name slot
changed, renames the characters it names (`Character.name`, `m3graph.graphdb.names`), all in the caller's
transaction. `correct_fact` is the analyst's override of one version (the rule: `m3graph.fact_versions`), written
and recomputed in one transaction like every other write. `history` and `facts_about` read a subject's versions
(the history tool) and the facts about named things (the facts_about tool); `next_hop` the facts about what
given facts' values name, as a search's version view shows them (the controller's multi-hop step,
`m3graph.reasoning.fact_chain`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.fact_versions import version_rows
from m3graph.graphdb.executor import Executor, Tx
from m3graph.graphdb.names import character_names, refresh_name_slots
from m3graph.graphdb.search import render_memory
from m3graph.graphdb.types import RenderedMemory
from m3graph.schema.character_names import known_names

__all__ = ["FactState", "character_names", "correct_fact", "face_names", "facts_about", "history", "next_hop",
           "refresh_slots"]


def refresh_slots(tx: Tx, source_id: str, slot_keys: Sequence[str | None], prune: bool = True) -> int:
    """Recomputes these slots of one source from the graph; returns how many memories it set. `prune`: also drop
    the source's named things no fact refers to any more (after memories were deleted or rewritten)."""
    keys = sorted({k for k in slot_keys if k})
    if not keys:
        return 0
    rows = version_rows(tx.run("facts/slot_assertions", source_id=source_id, slot_keys=keys))
    if rows:
        tx.run("facts/set_versions", rows=rows)
    if prune:
        tx.run("facts/orphan_things", source_id=source_id)
    refresh_name_slots(tx, source_id, keys)  # a name fact added, superseded, restored or deleted: Character.name
    return len(rows)


FactState = Literal["superseded", "current", "clear"]


def correct_fact(ex: Executor, memory_id: str, state: FactState, note: str | None = None, via: str = "manual"
                 ) -> dict[str, Any]:
    """Marks one fact superseded, restores it ("current") or clears the mark, then recomputes its slot, in one
    write transaction. Idempotent: the same state again changes nothing (`changed` False). Nothing is deleted."""
    if state not in ("superseded", "current", "clear"):
        raise InvalidInputError(f"fact state {state!r}: expected 'superseded', 'current' or 'clear'")
    at = datetime.now(UTC)
    entry = json.dumps({"at": at.isoformat(), "state": state, "via": via, "note": note}, ensure_ascii=False)

    def work(tx: Tx) -> dict[str, Any]:
        row = tx.single("facts/correct", memory_id=memory_id, state=state, note=note, via=via, at=at, entry=entry)
        if row is None:
            raise NotFoundError(f"memory {memory_id!r} does not exist")
        if row["slot_key"] is None:
            raise InvalidInputError(f"memory {memory_id!r} states no fact with a slot; only such facts have versions")
        if row["changed"]:
            refresh_slots(tx, row["source_id"], [row["slot_key"]], prune=False)
        now = tx.one("facts/version_of", memory_id=memory_id)
        return {"memory_id": memory_id, "video": row["source_id"], "slot": row["slot_key"], "state": state,
                "changed": bool(row["changed"]), "previous": row["before"] or "clear", "current": bool(now["current"]),
                **({"superseded": now["superseded_note"]} if now["superseded_note"] else {})}

    return ex.write_tx(work, label="correct_fact")


def history(ex: Executor, source_id: str, subject_key: str, attribute_key: str | None, k: int
            ) -> list[dict[str, Any]]:
    """Every version of one subject's slots (of one attribute, when given) in one source, oldest first."""
    rows = ex.read("facts/history", source_id=source_id, subject_key=subject_key, attribute_key=attribute_key, k=k)
    if attribute_key is None:
        return rows
    exact = f"{subject_key} · {attribute_key}"  # the key prefix also matched longer attributes
    return [r for r in rows if r["slot_key"] == exact or r["slot_key"].startswith(exact + " · ")]


def facts_about(ex: Executor, source_id: str, thing_keys: Sequence[str], all_versions: bool = False,
                k: int = 20) -> list[RenderedMemory]:
    """The facts of one source about these named things (their subject), in event order per thing."""
    ids = [r["memory_id"] for r in ex.read("facts/facts_about", source_id=source_id, thing_keys=list(thing_keys),
                                           all_versions=all_versions, k=k)]
    by_id = {r["memory_id"]: render_memory(r) for r in ex.read("search/memories_by_id", ids=ids)}
    return [by_id[i] for i in ids if i in by_id]


def next_hop(ex: Executor, memory_ids: Sequence[str], before_clip: int | None, view: dict[str, Any], k: int = 20
             ) -> list[tuple[str, RenderedMemory, str, datetime | None]]:
    """A multi-hop question's next hop (`m3graph.reasoning.fact_chain`): the facts about the things these facts'
    values name, as `view` (`VersionView.params()`) shows facts, never one said after `before_clip`; each once, as
    (source, fact, the given fact it was reached from (the first), its clip's start where the source is dated)."""
    rows = ex.read("facts/next_hop", memory_ids=list(memory_ids), before_clip=before_clip, k=k, **view)
    first = {r["memory_id"]: r for r in reversed(rows)}  # reversed: the first row of a fact wins
    if not first:
        return []
    found = {r["memory_id"]: r for r in ex.read("search/memories_by_id", ids=[r["memory_id"] for r in rows])}
    return [(first[i]["source_id"], render_memory(found[i]), first[i]["from_id"], _native(found[i]["started_at"]))
            for i in dict.fromkeys(r["memory_id"] for r in rows) if i in found]


def _native(value: Any) -> datetime | None:
    to_native = getattr(value, "to_native", None)
    native = to_native() if callable(to_native) else value
    return native if isinstance(native, datetime) else None


def face_names(tx: Tx, entity_ids: Iterable[int]) -> dict[int, str]:
    """Face entity id -> the display name of its character (`character_names`' rule), inside a write
    transaction: a photo's surrogate names the faces the graph already knows ("faces: <face_3> (Lena)")."""
    ids = sorted(set(entity_ids))
    if not ids:
        return {}
    chars = {r["entity_id"]: r["char_id"] for r in tx.run("graph/characters_of", ids=ids)}
    if not chars:
        return {}
    names = known_names(tx.run("facts/character_names", char_ids=sorted(set(chars.values()))))
    return {e: names[c] for e, c in chars.items() if c in names}
