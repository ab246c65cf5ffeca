"""The suite never wipes a graph it did not create (issue 9, Why 3: `NEO4J_URI=... pytest` erased a user's memory).

Run against the session's own server: the test removes the suite's marker and adds a node of its own that stands
for a user's memory, checks every path refuses and the node survives, then restores the marker.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from neo4j import Driver

from m3graph.graphdb.store import MemoryGraph
from tests.helpers.graph import (
    _WIPE_MARKED,
    MARKER_LABEL,
    SUITE,
    ForeignDatabaseError,
    claim_database,
    ownership_check,
    rows,
    wipe,
    wipe_owned,
)

REPO = Path(__file__).resolve().parents[2]
FOREIGN = "UsersOwnMemory"  # a label no m3graph code writes


@pytest.fixture
def foreign_graph(memory_graph: MemoryGraph, driver: Driver) -> Iterator[MemoryGraph]:
    """The session graph as a user's would look: one node the suite did not create, no marker."""
    wipe(memory_graph)
    db = memory_graph.ex.database
    with driver.session(database=db) as session:
        session.run(f"MATCH (mark:{MARKER_LABEL}) DELETE mark").consume()
        session.run(f"CREATE (:{FOREIGN} {{note: 'a memory the user cares about'}})").consume()
    try:
        yield memory_graph
    finally:
        with driver.session(database=db) as session:
            session.run(f"MATCH (u:{FOREIGN}) DELETE u").consume()
        claim_database(driver, db)


def _survivors(mg: MemoryGraph) -> int:
    return rows(mg, f"MATCH (u:{FOREIGN}) RETURN count(u) AS n")[0]["n"]


def test_every_wipe_refuses_a_graph_it_did_not_mark(foreign_graph: MemoryGraph, driver: Driver) -> None:
    db = foreign_graph.ex.database
    with pytest.raises(ForeignDatabaseError, match=r"holds 1 nodes .*UsersOwnMemory.* did not create"):
        ownership_check(driver, db)
    with pytest.raises(ForeignDatabaseError):
        claim_database(driver, db)
    with pytest.raises(ForeignDatabaseError):
        wipe_owned(driver, db)
    with pytest.raises(ForeignDatabaseError):
        wipe(foreign_graph)
    # The deleting statement checks the marker itself, so even a caller that skips the Python check deletes nothing.
    with driver.session(database=db) as session:
        session.run(_WIPE_MARKED, suite=SUITE).consume()
    assert _survivors(foreign_graph) == 1
    assert rows(foreign_graph, f"MATCH (m:{MARKER_LABEL}) RETURN count(m) AS n")[0]["n"] == 0, "nothing was claimed"


def test_a_marked_graph_is_wiped_but_keeps_migrations_and_marker(memory_graph: MemoryGraph, driver: Driver) -> None:
    db = memory_graph.ex.database
    ownership_check(driver, db)  # the session claimed its empty server
    with driver.session(database=db) as session:
        session.run("CREATE (:Video {video_id: 'owned-by-the-suite'})").consume()
    wipe(memory_graph)
    counts = rows(memory_graph, "MATCH (x) RETURN labels(x)[0] AS label, count(*) AS n")
    assert {r["label"] for r in counts} == {"Migration", MARKER_LABEL}
    assert rows(memory_graph, f"MATCH (m:{MARKER_LABEL}) RETURN count(m) AS n")[0]["n"] == 1


def test_a_session_pointed_at_a_foreign_graph_stops_before_writing(foreign_graph: MemoryGraph) -> None:
    """Why 3 end to end: a second pytest session with NEO4J_URI at this server exits with the message, at once."""
    env = {**os.environ, "NEO4J_URI": foreign_graph.settings.bolt_uri, "OMP_WAIT_POLICY": "PASSIVE"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/graph/test_identity.py", "-x"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out[-3000:]
    assert "refusing to run the tests against the Neo4j at" in out and FOREIGN in out, out[-3000:]
    assert _survivors(foreign_graph) == 1
    assert rows(foreign_graph, "MATCH (x) WHERE NOT x:Migration AND NOT x:" + FOREIGN + " RETURN count(x) AS n"
                )[0]["n"] == 0, "the refused session wrote nothing"
