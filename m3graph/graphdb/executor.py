"""The slim layer between m3graph and the Neo4j driver.

Stores receive an `Executor` and run *named* queries only. Reads are routed as reads; writes go through
managed transactions, which the driver may replay on transient errors, so every unit of work passed to
`write_tx` must be idempotent and must not have side effects outside the transaction.
Errors are translated by type: retryable driver errors become `RetryableError` (what Celery retries), a
transaction stopped by the per-transaction memory cap a `ConfigError` naming the setting (retrying cannot help),
everything else `GraphDBError`, always with the cause attached. Logs name the query and its parameter keys,
never the values (embeddings and personal data stay out of the logs).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Self, TypeVar

import neo4j
from neo4j import Query, RoutingControl
from neo4j.exceptions import DriverError, Neo4jError

from m3graph.cypher import CypherQuery, query
from m3graph.errors import ConfigError, GraphDBError, M3GraphError, RetryableError
from m3graph.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")
Row = dict[str, Any]


def _check_params(q: CypherQuery, params: dict[str, Any]) -> None:
    declared, given = set(q.params), set(params)
    if declared != given:
        missing, extra = sorted(declared - given), sorted(given - declared)
        raise TypeError(f"query {q.name}: missing parameters {missing}, unexpected {extra}")


def _translate(name: str, params: dict[str, Any], exc: Exception) -> Exception:
    log.warning("query %s failed (params %s): %s", name, sorted(params), type(exc).__name__)
    if isinstance(exc, Neo4jError) and _over_transaction_cap(exc):
        # Neo4j calls it transient, but the same transaction needs the same memory again: retrying later cannot
        # help, raising the cap can. Only the setting's name is quoted (the message holds sizes, never data).
        return ConfigError(f"query {name} needed more memory than one transaction may use "
                           "(db.memory.transaction.max); raise local.tx_memory_max_mb (or the server's own "
                           "setting at NEO4J_URI) for this run, or split the input")
    retryable = isinstance(exc, DriverError | Neo4jError) and exc.is_retryable()
    cls = RetryableError if retryable else GraphDBError
    return cls(f"query {name} failed: {exc}")


def _over_transaction_cap(exc: Neo4jError) -> bool:
    """The per-transaction memory cap (not the shared pool, which other transactions may free) stopped it."""
    code = exc.code or ""
    return ("MemoryLimit" in code or "OutOfMemory" in code) and "db.memory.transaction.max" in (exc.message or "")


def _version_tuple(version: str) -> tuple[int, ...]:
    """'2026.09.0' -> (2026, 9, 0); '5.26.30' -> (5, 26, 30); a suffix like '-aura' is ignored."""
    return tuple(int(part) for part in re.findall(r"\d+", version.split("-")[0])[:3])


@dataclass(frozen=True)
class Capabilities:
    """What the connected server can do, from its version (never guessed from error messages).

    Calendar versions (2025.01 on) follow 5.26 LTS; the thresholds are the releases that introduced each feature.
    """

    version: str
    edition: str

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return _version_tuple(self.version)

    def at_least(self, *wanted: int) -> bool:
        return self.version_tuple >= wanted

    @property
    def cypher25(self) -> bool:
        """The `CYPHER 25` language selector."""
        return self.at_least(2025, 6)

    @property
    def search_clause(self) -> bool:
        """`MATCH ... SEARCH n IN (VECTOR INDEX ... FOR $v [WHERE ...] LIMIT k) SCORE AS s` (Cypher 25)."""
        return self.at_least(2026, 1)

    @property
    def vector_filters(self) -> bool:
        """Vector indexes declared `WITH [n.prop, ...]` answer SEARCH ... WHERE on those properties in-index."""
        return self.at_least(2026, 1)

    @property
    def fulltext_search_clause(self) -> bool:
        return self.at_least(2026, 9)

    @property
    def vector_compaction(self) -> bool:
        """`internal.dbms.index.vector.post_population_compaction` (a launcher setting, for reports)."""
        return self.at_least(2026, 8)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Capabilities:
        return cls(version=str(row["version"]), edition=str(row["edition"]))


class Tx:
    """A running transaction that only accepts named queries."""

    def __init__(self, tx: neo4j.ManagedTransaction, timeout: float) -> None:
        self._tx = tx
        self._timeout = timeout

    def run(self, name: str, /, **params: Any) -> list[Row]:
        q = query(name)
        _check_params(q, params)
        result = self._tx.run(q.text, params)
        return [record.data() for record in result]

    def single(self, name: str, /, **params: Any) -> Row | None:
        rows = self.run(name, **params)
        return rows[0] if rows else None

    def one(self, name: str, /, **params: Any) -> Row:
        """For statements that always return a row (counters, aggregations): a missing row is a bug, named."""
        row = self.single(name, **params)
        if row is None:
            raise M3GraphError(f"query {name} returned no row")
        return row


class Executor:
    """Runs named queries against one database; thread-safe because the driver is."""

    def __init__(self, driver: neo4j.Driver, database: str, timeout_s: float) -> None:
        self.driver = driver
        self.database = database
        self.timeout_s = timeout_s
        self._capabilities: Capabilities | None = None
        self._capabilities_lock = threading.Lock()

    @property
    def capabilities(self) -> Capabilities:
        """The server's feature set, read once per connection (one `dbms.components()` round trip)."""
        if self._capabilities is None:
            with self._capabilities_lock:
                if self._capabilities is None:
                    rows = self.read("server/components")
                    if not rows:
                        raise GraphDBError("dbms.components() returned no Neo4j Kernel row; is this Neo4j?")
                    self._capabilities = Capabilities.from_row(rows[0])
                    log.info("connected to Neo4j %s %s", self._capabilities.version, self._capabilities.edition)
        return self._capabilities

    @classmethod
    def connect(cls, settings: Settings) -> Executor:
        driver = neo4j.GraphDatabase.driver(
            settings.bolt_uri,
            auth=(settings.neo4j_user, settings.neo4j_password.get_secret_value()),
            user_agent="m3graph",
            notifications_min_severity="OFF",
        )
        return cls(driver, settings.neo4j_database, settings.query_timeout_s)

    def close(self) -> None:
        self.driver.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _execute(self, name: str, params: dict[str, Any], routing: RoutingControl) -> list[Row]:
        q = query(name)
        _check_params(q, params)
        try:
            records, _, _ = self.driver.execute_query(
                Query(q.text, timeout=self.timeout_s),
                params,
                routing_=routing,
                database_=self.database,
            )
        except (Neo4jError, DriverError) as exc:
            raise _translate(name, params, exc) from exc
        return [record.data() for record in records]

    def read(self, name: str, /, **params: Any) -> list[Row]:
        return self._execute(name, params, RoutingControl.READ)

    def write(self, name: str, /, **params: Any) -> list[Row]:
        return self._execute(name, params, RoutingControl.WRITE)

    def schema(self, name: str, /, **params: Any) -> None:
        """DDL runs in an auto-commit transaction, as Neo4j requires."""
        q = query(name)
        _check_params(q, params)
        try:
            with self.driver.session(database=self.database) as session:
                session.run(Query(q.text, timeout=self.timeout_s), params).consume()
        except (Neo4jError, DriverError) as exc:
            raise _translate(name, params, exc) from exc

    def write_tx(self, work: Callable[[Tx], T], label: str = "write_tx") -> T:
        """Runs `work` in one managed write transaction (replayed by the driver on transient errors)."""
        return self._managed(work, label, write=True)

    def read_tx(self, work: Callable[[Tx], T], label: str = "read_tx") -> T:
        return self._managed(work, label, write=False)

    def _managed(self, work: Callable[[Tx], T], label: str, write: bool) -> T:
        def unit(tx: neo4j.ManagedTransaction) -> T:
            return work(Tx(tx, self.timeout_s))

        unit_of_work = neo4j.unit_of_work(timeout=self.timeout_s)(unit)
        try:
            with self.driver.session(database=self.database) as session:
                if write:
                    return session.execute_write(unit_of_work)
                return session.execute_read(unit_of_work)
        except (Neo4jError, DriverError) as exc:
            raise _translate(label, {}, exc) from exc

    @contextmanager
    def session(self) -> Iterator[neo4j.Session]:
        """A raw session for admin tools (EXPLAIN checks, benchmarks); application code uses named queries."""
        with self.driver.session(database=self.database) as session:
            yield session
