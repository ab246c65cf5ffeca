"""How the executor names a server error (m3graph/graphdb/executor.py `_translate`), on errors a real server raised.

A product transaction stopped by the per-transaction memory cap (`local.tx_memory_max_mb`, the server's
`db.memory.transaction.max`) is transient to Neo4j, but the same work needs the same memory again: it must say
which setting to raise (ConfigError, exit 78), not "retry later" (RetryableError, exit 75).
"""

from __future__ import annotations

import pytest
from neo4j import Driver
from neo4j.exceptions import Neo4jError

from m3graph.errors import ConfigError, RetryableError
from m3graph.graphdb.executor import _translate
from m3graph.settings import Settings


def _server_error(driver: Driver, settings: Settings, cypher: str) -> Neo4jError:
    """The error the server raises for `cypher`, from one auto-commit run (the driver does not replay those)."""
    with driver.session(database=settings.neo4j_database) as session, pytest.raises(Neo4jError) as caught:
        session.run(cypher).consume()
    return caught.value


def test_a_transaction_over_the_memory_cap_names_the_setting(driver: Driver, settings: Settings) -> None:
    assert settings.local.tx_memory_max_mb > 0, "the suite's server runs with the product's default cap"
    exc = _server_error(driver, settings, "UNWIND range(1, 100000000) AS x WITH collect(x) AS xs RETURN size(xs)")
    assert exc.is_retryable()  # Neo4j's own classification, which the executor overrides
    error = _translate("import/memories", {"rows": []}, exc)
    assert isinstance(error, ConfigError) and not isinstance(error, RetryableError)
    assert "local.tx_memory_max_mb" in str(error) and "import/memories" in str(error)


def test_other_server_errors_are_not_taken_for_the_cap(driver: Driver, settings: Settings) -> None:
    """A transaction that timed out is not a memory problem: no advice to raise the cap."""
    with (driver.session(database=settings.neo4j_database) as session, pytest.raises(Neo4jError) as caught,
          session.begin_transaction(timeout=0.05) as tx):
        tx.run("UNWIND range(1, 200000000) AS x RETURN count(x)").consume()
    error = _translate("search/ranked", {}, caught.value)
    assert not isinstance(error, ConfigError)
    assert "tx_memory_max_mb" not in str(error)
