"""Guarded read-only Cypher for agents: arbitrary query text, closed by default, the graph never changes.

Layers, each enough on its own for some attacks and each tested on its own:
1. ``EXPLAIN`` first, and the SERVER's answer decides: the query type must be ``r`` and every operator,
   procedure, function, subscript and property key in the plan must be on the allow-list of `guard_plan`
   (admin and transaction commands, writes, LOAD CSV, unknown operators, dynamic property reads and vector keys
   are refused). No procedure, function or operator that scores a caller's vector against stored ones runs
   (`VECTOR_ORACLES`: basis-vector probes read every stored vector back), and every expression must build a
   bounded value in bounded time (`guard_builds.check_builds`: the server neither memory-tracks nor interrupts
   what one expression builds).
2. The query runs in an explicit READ transaction, so the server itself refuses a write that slipped through the
   first layer. It is an explicit transaction, not the driver's managed one, so a failure is never retried: a
   query that exhausted server memory used to be replayed five times while every other transaction failed.
3. A server-side transaction timeout, backed by the guard's own deadline (1.5 timeouts, then the connection is
   closed and the server is told to end the transaction, which the guard waits for: `guard_ending`), and rows
   consumed one by one with the row cap and the output byte cap enforced as they arrive: a record over the cap is
   refused while its bytes arrive, before it is decoded (the rest is discarded and the transaction rolled back).
   Every node, relationship and map loses its vector keys and long float lists become a placeholder
   (`guard_vectors`). Errors raised while the query runs are reported by status code only: a
   server message can quote the data it failed on.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

import neo4j
from neo4j.exceptions import CypherSyntaxError, DriverError, Neo4jError

from m3graph.errors import M3GraphError
from m3graph.graphdb.guard_builds import check_builds, check_inputs
from m3graph.graphdb.guard_ending import METADATA_KEY, end_transaction, new_token
from m3graph.graphdb.guard_limits import GuardLimits
from m3graph.graphdb.guard_plan import (
    _CALL,
    PlanRefusal,
    _details,
    _unquoted,
    calls_procedures,
    check_plan,
    dbms_listing,
    operator_name,
    operators,
)
from m3graph.graphdb.guard_vectors import FLOAT_LIST_MAX, VectorPolicy, load_policy

__all__ = ["FLOAT_LIST_MAX", "GuardLimits", "GuardedCypherError", "GuardedResult", "VectorPolicy", "run_guarded"]

# Procedures and functions that score a caller-supplied vector against stored ones. Each is an oracle: probed with
# the unit basis vectors, `db.index.vector.queryNodes` answered score = (1 + cos) / 2, one coordinate of every
# stored unit vector per call, so 128 calls read back every face descriptor. None may run here, whatever the plan
# allow-list says; semantic search stays in the product's own tools, which take text, not vectors.
VECTOR_ORACLES = re.compile(r"^(?:db\.index\.vector\.|db\.create\.set\w*vectorproperty|vector\.similarity\.|"
                            r"vector_distance$|vector_norm$|vector$|vector\.|gds\.|genai\.|ai\.)", re.I)
# GQL statuses of "no such function" / "no such procedure": an APOC name on a server without APOC.
NOT_FOUND_STATUSES = frozenset({"42N48", "42N08"})
_DRIVER_LOG = logging.getLogger("neo4j.io")
DEADLINE_FACTOR = 1.5  # the guard's own deadline, in timeouts: the server's monitor checks timeouts every 2 s
ENDED_FACTOR = 1.9  # by then the server must have ended the transaction the guard gave up on (guard_ending)
BYTES_ENDING_S = 1.0  # how long to wait for the server to end a read whose record was refused while it arrived
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


def refuse_vector_oracles(plan: Any) -> None:
    """Raises `PlanRefusal` ("vector") if the plan calls a procedure or function that scores vectors."""
    for node in operators(plan):
        if "vector" in operator_name(node).lower():  # 2026's SEARCH clause plans as NodeVectorIndexSearch
            raise PlanRefusal("vector", f"{operator_name(node)} scores a caller's vector against stored ones; it "
                                        "never runs here (search by text with the search tools)")
        text, _ = _unquoted(_details(node))
        for m in _CALL.finditer(text):
            if VECTOR_ORACLES.match(m.group(1)):
                raise PlanRefusal("vector", f"{m.group(1)} scores a caller's vector against stored ones: probed with "
                                            "basis vectors it reads them back, so it never runs here (search by text "
                                            "with the search tools)")


def _check(plan: Any, policy: VectorPolicy, query: str, params: dict[str, Any]) -> None:
    try:
        refuse_vector_oracles(plan)
        check_plan(plan, policy)
        check_builds(plan, query, params)
    except PlanRefusal as refusal:
        raise GuardedCypherError(refusal.reason, refusal.detail) from None


class _ReadGuard:
    """The byte cap and the deadline, applied while a record's bytes arrive, before the driver decodes them.

    Why the byte cap here: it used to be checked on the decoded, scrubbed, JSON-encoded row, so a 512 MiB string row
    was received, decoded and encoded first (the CLI peaked at 2.19 GB). The driver reads one message into its
    buffer chunk by chunk; this stands in for the connection's socket and refuses the next chunk once the message
    being read is over the cap.
    Why a deadline here: the server checks transaction timeouts on a monitor tick (2 s by default), so a 1.5 s
    timeout ended the work after 3.5 s. Each read waits at most until `deadline`; past it the read fails.
    Either way the connection is closed (its stream is mid-message), and the server ends the transaction of a
    client that went away (measured: within 0.3 s). The driver's layout is private: where it is not the expected
    one, nothing is installed, and the server's timeout and the decoded-size check in `_stream` still hold.
    """

    def __init__(self, tx: neo4j.Transaction, limit: int, deadline: float) -> None:
        self.limit = limit
        self.deadline = deadline
        self.tripped = ""  # "bytes" or "deadline" once the guard broke the connection
        self._inbox: Any = None
        self._socket: Any = None
        self._buffer: Any = None
        inbox: Any = getattr(getattr(tx, "_connection", None), "inbox", None)
        sock, buffer = getattr(inbox, "_socket", None), getattr(inbox, "_buffer", None)
        if sock is None or not isinstance(getattr(buffer, "used", None), int):
            return
        self._inbox, self._socket, self._buffer = inbox, sock, buffer
        self._timeout = sock.get_read_timeout() if hasattr(sock, "get_read_timeout") else None
        inbox._socket = self
        _DRIVER_LOG.addFilter(self._quiet)

    @staticmethod
    def _quiet(record: logging.LogRecord) -> bool:
        """The driver logs the broken read as a connection error; here it is the guard at work, not a fault."""
        return "[read guard]" not in record.getMessage()

    def recv_into(self, view: Any, n: int) -> int:
        if self._buffer.used > self.limit:
            self.tripped = "bytes"
            raise OSError(f"[read guard] a record over the {self.limit}-byte cap was refused while it arrived")
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.tripped = "deadline"
            raise OSError("[read guard] past the deadline")
        if hasattr(self._socket, "set_read_timeout"):
            self._socket.set_read_timeout(left)
        try:
            return int(self._socket.recv_into(view, n))
        except TimeoutError:
            self.tripped = "deadline"
            raise OSError("[read guard] past the deadline") from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._socket, name)

    def remove(self) -> None:
        if self._inbox is not None and self._inbox._socket is self:
            self._inbox._socket = self._socket
            if hasattr(self._socket, "set_read_timeout"):
                self._socket.set_read_timeout(self._timeout)
        _DRIVER_LOG.removeFilter(self._quiet)


def _wire_cap(limits: GuardLimits) -> int:
    """Bytes one record may take on the wire: the output cap, and never less than one Bolt chunk (64 KiB), so the
    small messages around the records (the summary and its notifications) always fit."""
    return max(limits.max_bytes, 65_536)


def _deadline(started: float, limits: GuardLimits) -> float:
    """When the guard closes the connection itself: the server's timeout plus half of it again."""
    return started + DEADLINE_FACTOR * limits.timeout_s


def _stream(result: neo4j.Result, policy: VectorPolicy, limits: GuardLimits, out: GuardedResult,
            guard: _ReadGuard) -> None:
    size = 2
    records = iter(result)
    while True:
        try:
            record = next(records)
        except StopIteration:
            break
        except (DriverError, Neo4jError, OSError):
            if not guard.tripped:
                raise
            if guard.tripped == "bytes":
                out.truncated = True
                out.notes.append(f"output cut after {len(out.rows)} rows: the next record was over {guard.limit} "
                                 "bytes and was refused while it arrived, before it was decoded")
            break
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


def run_guarded(driver: neo4j.Driver, database: str, query: str, params: dict[str, Any] | None = None, *,
                timeout_s: float = 10.0, max_rows: int = 1000, max_bytes: int = 1_000_000,
                limits: GuardLimits | None = None) -> GuardedResult:
    """Runs `query` read-only under `limits` (or the three keyword bounds, validated the same way)."""
    limits = limits or GuardLimits(timeout_s=timeout_s, max_rows=max_rows, max_bytes=max_bytes)
    params = dict(params or {})
    if not isinstance(query, str) or not query.strip():
        raise GuardedCypherError("empty", "no query given")
    _check_params(params)
    try:
        check_inputs(query, params)
    except PlanRefusal as refusal:
        raise GuardedCypherError(refusal.reason, refusal.detail) from None
    running = False
    out: GuardedResult | None = None
    guard: _ReadGuard | None = None
    started, token = time.monotonic(), new_token()
    try:
        with (driver.session(database=database, default_access_mode=neo4j.READ_ACCESS,
                             fetch_size=min(limits.max_rows + 1, FETCH_MAX)) as session,
              session.begin_transaction(timeout=limits.timeout_s, metadata={METADATA_KEY: token}) as tx):
            policy = load_policy(tx)
            summary = tx.run("EXPLAIN " + query, params).consume()
            kind, procedures = summary.query_type, calls_procedures(summary.plan)
            if procedures:  # a procedure's own name is the clearer refusal (its query type follows from it)
                _check(summary.plan, policy, query, params)
            if kind in ("w", "rw") or (kind == "s" and not procedures):
                raise GuardedCypherError("write", f"query type {kind!r}: only read queries run here")
            _check(summary.plan, policy, query, params)
            if kind != "r" and not dbms_listing(summary.plan):
                raise GuardedCypherError("write", f"query type {kind!r}: only read queries run here")
            running = True
            guard = _ReadGuard(tx, _wire_cap(limits), _deadline(started, limits))
            try:
                result = tx.run(query, params)
                out = GuardedResult(list(result.keys()), [])
                _stream(result, policy, limits, out, guard)
            finally:
                guard.remove()
            if not guard.tripped:
                tx.rollback()  # discards what was not consumed; a read has nothing to commit
    except GuardedCypherError:
        raise
    except (Neo4jError, DriverError, OSError) as exc:
        if guard is None or not guard.tripped:  # else: closing the connection the guard broke failed, as it may
            if isinstance(exc, Neo4jError):
                raise _server_error(exc, limits, running) from None
            raise GuardedCypherError("failed", f"{type(exc).__name__}: {_first_line(str(exc))}") from None
    if guard is not None and guard.tripped:
        until = (started + ENDED_FACTOR * limits.timeout_s if guard.tripped == "deadline"
                 else time.monotonic() + BYTES_ENDING_S)
        end_transaction(driver, database, token, until)
    if guard is not None and guard.tripped == "deadline":
        raise GuardedCypherError("timeout", f"stopped after {limits.timeout_s:g} s (the connection was closed, "
                                            "which ends the server's transaction)")
    assert out is not None
    return out
