"""`Character.name` from the facts: the rule every reader and the write path share, and its backfill.

A character's display name is the current value of a name fact about one of its members, else the name its
speaker speaks under (`facts/character_names.cypher` derives both); `Character.name` holds that name, or
``character_K`` where none is known, so Neo4j Browser and Bloom show people by name. The write path keeps it
current (`m3graph.graphdb.names.refresh_character_names`, called wherever a name fact or a character's members
change); `backfill_character_names` sets it on a graph written before, page by page (a migration calls it).

It lives in the schema layer because a migration calls it, and the store imports the schema layer, never the
other way round (tests/unit/test_layers.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from m3graph.schema.pages import BACKFILL_BATCH, pages


class _Executor(Protocol):
    def read(self, name: str, /, **params: Any) -> list[dict[str, Any]]: ...

    def write(self, name: str, /, **params: Any) -> list[dict[str, Any]]: ...


def known_names(rows: Iterable[Mapping[str, Any]]) -> dict[int, str]:
    """char id -> display name, from `facts/character_names` rows; characters without a known name are left out."""
    return {int(r["char_id"]): str(r["fact_name"] or r["speaker_name"]) for r in rows
            if r["fact_name"] or r["speaker_name"]}


def name_rows(char_ids: Iterable[int], rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`characters/set_names` rows: each existing character's display name, else ``character_K``."""
    rows = list(rows)
    names = known_names(rows)
    found = {int(r["char_id"]) for r in rows}
    return [{"char_id": c, "name": names.get(c, f"character_{c}")} for c in sorted(set(char_ids)) if c in found]


def backfill_character_names(executor: _Executor, batch: int = BACKFILL_BATCH) -> int:
    """Sets `Character.name` on every character to its display name (or ``character_K``); returns how many names
    changed. Idempotent: a second run changes nothing."""
    changed = 0
    for page in pages(executor, "characters/name_page", "char_id", batch, after=-1):
        ids = [int(r["char_id"]) for r in page]
        rows = name_rows(ids, executor.read("facts/character_names", char_ids=ids))
        if rows:
            changed += int(executor.write("characters/set_names", rows=rows)[0]["changed"])
    return changed
