"""Guarded read-only Cypher for agents: arbitrary query text, closed by default, the graph never changes.

Layers, each enough on its own for some attacks and each tested on its own:
1. ``EXPLAIN`` first, and the SERVER's answer decides: the query type must be ``r`` and every operator,
   procedure, function, subscript and property key in the plan must be on the allow-list of `guard_plan`
   (admin and transaction commands, writes, LOAD CSV, unknown operators, dynamic property reads and vector keys
   are refused).
2. The query runs in an explicit READ transaction, so the server itself refuses a write that slipped through the
   first layer. It is an explicit transaction, not the driver's managed one, so a failure is never retried: a
   query that exhausted server memory used to be replayed five times while every other transaction failed.
3. A server-side transaction timeout, and rows consumed one by one with the row cap and the output byte cap
   enforced as they arrive (the rest is discarded and the transaction rolled back). Every node, relationship and
   map loses its vector keys and long float lists become a placeholder (`guard_vectors`). Errors raised while the
   query runs are reported by status code only: a server message can quote the data it failed on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import neo4j
from neo4j.exceptions import CypherSyntaxError, DriverError, Neo4jError

from m3graph.errors import M3GraphError
from m3graph.graphdb.guard_limits import GuardLimits
from m3graph.graphdb.guard_plan import PlanRefusal, calls_procedures, check_plan, dbms_listing
from m3graph.graphdb.guard_vectors import FLOAT_LIST_MAX, VectorPolicy, load_policy

__all__ = ["FLOAT_LIST_MAX", "GuardLimits", "GuardedCypherError", "GuardedResult", "VectorPolicy", "run_guarded"]

# GQL statuses of "no such function" / "no such procedure": an APOC name on a server without APOC.
NOT_FOUND_STATUSES = frozenset({"42N48", "42N08"})
FETCH_MAX = 500  # records per PULL: the server produces rows only as fast as the caps let them be consumed


class GuardedCypherError(M3GraphError, ValueError):
    """A query the guard refused; `reason` is one short word a caller can test."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"cypher refused ({reason}): {detail}")
        self.reason = reason


@dataclass
class GuardedResult:
    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool = False
    notes: list[str] = field(default_factory=list)


def _first_line(text: str | None, limit: int = 300) -> str:
    first = next((line.strip() for line in (text or "").splitlines() if line.strip()), "")
    return first[:limit]


def _gql_statuses(exc: BaseException) -> set[str]:
    found: set[str] = set()
    cause: BaseException | None = exc
    while cause is not None:
        status = getattr(cause, "gql_status", None)
        if status:
            found.add(str(status))
        cause = cause.__cause__
    return found


# A memory refusal names only sizes and the setting that tripped (never data), so those two parts are quoted.
_MEMORY_LIMIT = re.compile(r"\blimit (\d+(?:\.\d+)? [KMGT]?i?B)\b")
_MEMORY_SETTING = re.compile(r"\b((?:db|dbms)\.memory\.transaction\.[a-z_.]*max)\b threshold reached")


def _memory_detail(message: str | None, code: str) -> str:
    """Which memory bound stopped the query: the per-transaction cap (the usual one) or the shared pool."""
    limit = _MEMORY_LIMIT.search(message or "")
    setting = _MEMORY_SETTING.search(message or "")
    if setting is None:
        return f"the query needed more memory than the server allows ({code}); nothing was retried"
    which = ("one transaction may use" if setting.group(1) == "db.memory.transaction.max"
             else "all transactions share")
    size = f"the {limit.group(1)} " if limit else "the memory "
    return f"the query needed more than {size}{which} ({setting.group(1)}); it was stopped and not retried"


def _server_error(exc: Neo4jError, limits: GuardLimits, running: bool) -> GuardedCypherError:
    """One line for a server error. While the query runs, only the code: messages can quote stored values."""
    code = exc.code or ""
    if "TimedOut" in code or code.endswith(".Terminated"):
        return GuardedCypherError("timeout", f"stopped after {limits.timeout_s:g} s")
    if "MemoryLimit" in code or "OutOfMemory" in code or "MemoryPool" in code:
        return GuardedCypherError("memory", _memory_detail(exc.message, code))
    if "AccessMode" in code or "Forbidden" in code:
        return GuardedCypherError("write", "the server refused it in a read transaction (a write or an "
                                           "administration command)")
    if code.endswith("ProcedureNotFound") or _gql_statuses(exc) & NOT_FOUND_STATUSES:
        return GuardedCypherError("procedure", f"{_first_line(exc.message)}")
    if isinstance(exc, CypherSyntaxError) and not running:
        return GuardedCypherError("syntax", _first_line(exc.message))
    if running:
        return GuardedCypherError("failed", f"{code} (the server's message is withheld: it may quote data)")
    return GuardedCypherError("refused", f"{code}: {_first_line(exc.message)}")


def _check_params(params: dict[str, Any]) -> None:
    for key in params:
        if not isinstance(key, str) or not key.isidentifier():
            raise GuardedCypherError("param", f"parameter name {key!r} is not an identifier")
        if key.lower().startswith("auto"):  # the server's own literal parameters are `$autoint_0`, `$autostring_0`
            raise GuardedCypherError("param", f"parameter name {key!r}: names starting with 'auto' are reserved")


def _check(plan: Any, policy: VectorPolicy) -> None:
    try:
        check_plan(plan, policy)
    except PlanRefusal as refusal:
        raise GuardedCypherError(refusal.reason, refusal.detail) from None


def _stream(result: neo4j.Result, policy: VectorPolicy, limits: GuardLimits) -> GuardedResult:
    out = GuardedResult(list(result.keys()), [])
    size = 2
    for record in result:
        if len(out.rows) >= limits.max_rows:
            out.truncated = True
            out.notes.append(f"truncated at {limits.max_rows} rows")
            break
        row = {k: policy.scrub(v) for k, v in record.items()}
        size += len(json.dumps(row, default=str)) + 2
        if size > limits.max_bytes:
            out.truncated = True
            out.notes.append(f"output cut at {limits.max_bytes} bytes after {len(out.rows)} rows")
            break
        out.rows.append(row)
    return out


def run_guarded(driver: neo4j.Driver, database: str, query: str, params: dict[str, Any] | None = None, *,
                timeout_s: float = 10.0, max_rows: int = 1000, max_bytes: int = 1_000_000,
                limits: GuardLimits | None = None) -> GuardedResult:
    """Runs `query` read-only under `limits` (or the three keyword bounds, validated the same way)."""
    limits = limits or GuardLimits(timeout_s=timeout_s, max_rows=max_rows, max_bytes=max_bytes)
    params = dict(params or {})
    if not isinstance(query, str) or not query.strip():
        raise GuardedCypherError("empty", "no query given")
    _check_params(params)
    running = False
    try:
        with (driver.session(database=database, default_access_mode=neo4j.READ_ACCESS,
                             fetch_size=min(limits.max_rows + 1, FETCH_MAX)) as session,
              session.begin_transaction(timeout=limits.timeout_s) as tx):
            policy = load_policy(tx)
            summary = tx.run("EXPLAIN " + query, params).consume()
            kind, procedures = summary.query_type, calls_procedures(summary.plan)
            if procedures:  # a procedure's own name is the clearer refusal (its query type follows from it)
                _check(summary.plan, policy)
            if kind in ("w", "rw") or (kind == "s" and not procedures):
                raise GuardedCypherError("write", f"query type {kind!r}: only read queries run here")
            _check(summary.plan, policy)
            if kind != "r" and not dbms_listing(summary.plan):
                raise GuardedCypherError("write", f"query type {kind!r}: only read queries run here")
            running = True
            out = _stream(tx.run(query, params), policy, limits)
            tx.rollback()  # discards what was not consumed; a read has nothing to commit
    except GuardedCypherError:
        raise
    except Neo4jError as exc:
        raise _server_error(exc, limits, running) from None
    except DriverError as exc:
        raise GuardedCypherError("failed", f"{type(exc).__name__}: {_first_line(str(exc))}") from None
    return out
