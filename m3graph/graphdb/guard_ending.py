"""Ending the server's side of a guarded read the guard gave up on.

Why: at its deadline the guard closes the connection, and the server ends the transaction of a client that went
away, but on its own schedule: measured 0.3 s on a quiet machine and more than 1.5 s under load on Neo4j 5.26, so
a read reported "stopped" could still be running. Each guarded transaction carries a token in its metadata; after a
deadline the guard terminates the transaction with that token and waits, up to a bound, until the server no longer
lists it. Both steps are best effort (a server or role that refuses them leaves the server's own timeout in force).
"""

from __future__ import annotations

import secrets
import time

import neo4j
from neo4j.exceptions import DriverError, Neo4jError

from m3graph.cypher import query

METADATA_KEY = "m3graph_guard"
POLL_S = 0.05


def new_token() -> str:
    """A token no other run shares, so only this run's transaction is ever terminated."""
    return secrets.token_hex(8)


def end_transaction(driver: neo4j.Driver, database: str, token: str, until: float) -> bool:
    """Terminates the transaction tagged `token` and waits until it is gone or `until` (monotonic) passes.

    Returns whether the server confirmed that nothing tagged `token` still runs.
    """
    try:
        with driver.session(database=database) as session:
            session.run(query("guard/end_transaction").text, token=token).consume()
            while True:
                (row,) = session.run(query("guard/own_transaction").text, token=token).data()
                if int(row["n"]) == 0:
                    return True
                if time.monotonic() >= until:
                    return False
                time.sleep(POLL_S)
    except (Neo4jError, DriverError, OSError):
        return False
