"""Read-only Cypher an analyst or an agent writes, through the guard, as a typed result.

Why in the service: `m3graph cypher` and the MCP tool `read_cypher` both ran the guard on the store's driver
themselves; now both call `read_cypher` here, so a front end never holds the driver. The guard itself (plan
checks, procedure policy, timeout, row and byte caps) is `m3graph.graphdb.guarded`; the bounds are
`GuardLimits`, checked where they are built (`check_timeout`, `check_max_rows` for a front end's own options).
"""

from __future__ import annotations

from typing import Any

from m3graph.graphdb.guard_limits import GuardLimits, check_max_rows, check_timeout
from m3graph.graphdb.guarded import run_guarded
from m3graph.graphdb.store import MemoryGraph
from m3graph.service.results import Result


class CypherRows(Result):
    """The rows of one guarded read (vectors replaced by a placeholder), and whether the row cap cut them."""

    columns: list[str]
    rows: list[dict[str, Any]]
    row_count: int
    truncated: bool
    notes: list[str]


def read_cypher(graph: MemoryGraph, query: str, params: dict[str, Any] | None, limits: GuardLimits) -> CypherRows:
    """One read-only statement under `limits`; a refusal is a `GuardedCypherError` naming its reason."""
    out = run_guarded(graph.ex.driver, graph.ex.database, query, params or {}, limits=limits)
    return CypherRows(columns=list(out.columns), rows=list(out.rows), row_count=len(out.rows),
                      truncated=out.truncated, notes=list(out.notes))


__all__ = ["CypherRows", "GuardLimits", "check_max_rows", "check_timeout", "read_cypher"]
