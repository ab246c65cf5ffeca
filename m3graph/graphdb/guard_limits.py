"""The bounds of one guarded Cypher call, validated once for every entry point (`m3graph cypher`, `m3graph mcp`).

Why one place: the CLI, the MCP server options and `run_guarded` used to take raw numbers, so `--timeout 0`
switched the server-side timeout off, `--max-rows -1` returned nothing and a negative MCP timeout only failed at
the first tool call. Each bound here is checked by type and range when the limits are built, so a bad value is
refused at the boundary, in one line. What one query may build inside an expression is bounded apart
(`m3graph.graphdb.guard_builds`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from m3graph.errors import InvalidInputError

TIMEOUT_MAX_S = 300.0  # a guarded read is an analyst's question, not a batch job
ROWS_MAX = 100_000
BYTES_MIN = 1_000
BYTES_MAX = 50_000_000


def check_timeout(value: object, name: str = "timeout") -> float:
    """A timeout in (0, 300] seconds: 0 would mean "no timeout" to the server, so it is refused like a negative."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"{name} must be a number of seconds in (0, {TIMEOUT_MAX_S:g}], got {value!r}")
    if not 0 < value <= TIMEOUT_MAX_S:
        raise InvalidInputError(f"{name} must be in (0, {TIMEOUT_MAX_S:g}] seconds, got {value:g}")
    return float(value)


def check_max_rows(value: object, name: str = "max_rows") -> int:
    """A row cap in 1..100000: 0 or a negative cap returned no rows at all ("truncated at -1 rows")."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be a whole number in 1..{ROWS_MAX}, got {value!r}")
    if not 1 <= value <= ROWS_MAX:
        raise InvalidInputError(f"{name} must be in 1..{ROWS_MAX}, got {value}")
    return value


def check_max_bytes(value: object, name: str = "max_bytes") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not BYTES_MIN <= value <= BYTES_MAX:
        raise InvalidInputError(f"{name} must be a whole number in {BYTES_MIN}..{BYTES_MAX}, got {value!r}")
    return value


@dataclass(frozen=True)
class GuardLimits:
    """Server-side timeout, row cap and output byte cap of one guarded query; invalid values never construct."""

    timeout_s: float = 10.0
    max_rows: int = 1000
    max_bytes: int = 1_000_000

    def __post_init__(self) -> None:
        object.__setattr__(self, "timeout_s", check_timeout(self.timeout_s))
        object.__setattr__(self, "max_rows", check_max_rows(self.max_rows))
        object.__setattr__(self, "max_bytes", check_max_bytes(self.max_bytes))
