"""Keyset pages of a backfill's read: the one loop every paged migration walks.

Why a module of its own: each backfill (migrations 12, 13, 15, 17, 18) reads what it must change a page at a
time, ordered by a key, and continues after the page's last key until a short page; written out five times the
loop differed only in its query and key. `migrations.py` imports the backfills of `sources.py` and
`character_names.py`, so the loop lives below all three.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

BACKFILL_BATCH = 500  # rows a backfill reads and writes per transaction


class _Reader(Protocol):
    def read(self, name: str, /, **params: Any) -> list[dict[str, Any]]: ...


def pages(executor: _Reader, query: str, key: str, batch: int, after: Any = "") -> Iterator[list[dict[str, Any]]]:
    """The non-empty pages of `query` (params `after`, `n`), each continuing after the last page's `key`; ends
    after a page shorter than `batch`."""
    while True:
        page = executor.read(query, after=after, n=batch)
        if page:
            yield page
            after = page[-1][key]
        if len(page) < batch:
            return
