# ruff: noqa: F811  (fixtures imported from graph_fixtures are requested by name)
"""Guarded read-only Cypher: a corpus of hostile queries, each refused for its reason, the graph unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from auth_server import apoc_server, apoc_settings  # noqa: F401
from graph_fixtures import graph, memory_graph, rows  # noqa: F401
from test_cli_errors import _m3graph

from m3graph.cli import exit_codes
from m3graph.graphdb.guarded import GuardedCypherError, check_names, run_guarded
from m3graph.graphdb.store import MemoryGraph
from m3graph.localserver.server import ServerStatus
from m3graph.settings import Settings

CHECKSUM = ("MATCH (n) WITH count(n) AS nodes, collect(DISTINCT labels(n)) AS labels "
            "OPTIONAL MATCH ()-[r]->() RETURN nodes, labels, count(r) AS rels")
SCHEMA = "SHOW INDEXES YIELD name RETURN collect(name) AS names"

HOSTILE: list[tuple[str, str, str]] = [
    ("create", "CREATE (:Pwned)", "write"),
    ("merge", "MERGE (:Pwned {x: 1})", "write"),
    ("set", "MATCH (n:GuardSeed) SET n.x = 2", "write"),
    ("delete", "MATCH (n:GuardSeed) DETACH DELETE n", "write"),
    ("remove", "MATCH (n:GuardSeed) REMOVE n.x", "write"),
    ("remove label", "MATCH (n:GuardSeed) REMOVE n:GuardSeed", "write"),
    ("set label", "MATCH (n:GuardSeed) SET n:Pwned", "write"),
    ("create after read", "MATCH (n:GuardSeed) WITH n CREATE (n)-[:PWNED]->(:Pwned)", "write"),
    ("foreach", "MATCH (n:GuardSeed) FOREACH (i IN [1] | SET n.x = i)", "write"),
    ("call subquery write", "CALL () { CREATE (:Pwned) } RETURN 1", "write"),
    ("in transactions", "UNWIND [1, 2] AS i CALL (i) { CREATE (:Pwned {i: i}) } IN TRANSACTIONS RETURN i", "write"),
    ("load csv passwd", "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line", "procedure"),
    ("load csv lower", "load csv with headers from 'http://127.0.0.1:7474/' as l return l", "procedure"),
    ("apoc.load.json file", "CALL apoc.load.json('file:///etc/passwd') YIELD value RETURN value", "procedure"),
    ("apoc.load.json loopback", "CALL apoc.load.json('http://127.0.0.1:7474/') YIELD value RETURN value",
     "procedure"),
    ("apoc.load spaced", "CALL apoc . load . json('file:///etc/hosts') YIELD value RETURN value", "procedure"),
    ("apoc.load backticks", "CALL `apoc`.`load`.json('file:///etc/hosts') YIELD value RETURN value", "procedure"),
    ("apoc.cypher.runWrite", "CALL apoc.cypher.runWrite('CREATE (:Pwned)', {}) YIELD value RETURN value",
     "procedure"),
    ("apoc.cypher.doIt", "CALL apoc.cypher.doIt('CREATE (:Pwned)', {}) YIELD value RETURN value", "procedure"),
    ("apoc.periodic", "CALL apoc.periodic.iterate('RETURN 1', 'CREATE (:Pwned)', {}) YIELD batches RETURN 1",
     "procedure"),
    ("apoc.export", "CALL apoc.export.json.all('/tmp/x.json', {}) YIELD file RETURN file", "procedure"),
    ("apoc.import", "CALL apoc.import.json('file:///tmp/x.json') YIELD nodes RETURN nodes", "procedure"),
    ("apoc.trigger", "CALL apoc.trigger.add('t', 'CREATE (:Pwned)', {}) YIELD name RETURN name", "procedure"),
    ("apoc function in return", "RETURN apoc.cypher.runFirstColumnSingle('MATCH (n) RETURN n', {})", "procedure"),
    ("dbms procedure", "CALL dbms.setConfigValue('db.logs.query.enabled', 'OFF')", "procedure"),
    ("dbms security", "CALL dbms.security.createUser('x', 'y', false)", "procedure"),
    ("db.create", "CALL db.createLabel('Pwned')", "procedure"),
    ("schema index", "CREATE INDEX pwned IF NOT EXISTS FOR (n:Pwned) ON (n.x)", "write"),
    ("schema drop", "DROP INDEX memory_vector IF EXISTS", "write"),
    ("constraint", "CREATE CONSTRAINT pwned IF NOT EXISTS FOR (n:Pwned) REQUIRE n.x IS UNIQUE", "write"),
    ("two statements", "MATCH (n) RETURN count(n); CREATE (:Pwned)", "syntax"),
    ("comment hides write", "MATCH (n) RETURN n // harmless\nCREATE (:Pwned)", "syntax"),
    ("block comment write", "/* read only */ CREATE (:Pwned)", "write"),
    ("unicode lookalike", "MATCH (n) RETURN n \u037e CREATE (:Pwned)", "syntax"),
    ("fullwidth keyword", "\uff23REATE (:Pwned)", "syntax"),
    ("cartesian timeout", "UNWIND range(1, 100000) AS a UNWIND range(1, 100000) AS b "
     "WITH a, b WHERE a * b = -1 RETURN count(*)", "timeout"),
    ("empty", "   ", "empty"),
]


def _checksum(mg: MemoryGraph) -> tuple[object, ...]:
    (c,) = rows(mg, CHECKSUM)
    (s,) = rows(mg, SCHEMA)
    return c["nodes"], sorted(map(tuple, c["labels"])), c["rels"], sorted(s["names"])


def _run(mg: MemoryGraph, query: str, **kw: object):  # type: ignore[no-untyped-def]
    return run_guarded(mg.ex.driver, mg.ex.database, query, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "query", "reason"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_query_is_refused_and_the_graph_unchanged(graph: MemoryGraph, name: str, query: str,
                                                        reason: str) -> None:
    rows(graph, "CREATE (:GuardSeed {x: 1})-[:NEXT]->(:GuardSeed {x: 2})")
    before = _checksum(graph)
    with pytest.raises(GuardedCypherError) as info:
        _run(graph, query, timeout_s=2.0)
    assert info.value.reason == reason, str(info.value)
    assert "\n" not in str(info.value)
    assert _checksum(graph) == before


def test_row_cap_reports_truncation_and_embeddings_are_hidden(graph: MemoryGraph) -> None:
    out = _run(graph, "UNWIND range(1, 5000) AS i RETURN i", max_rows=1000)
    assert len(out.rows) == 1000 and out.truncated
    out = _run(graph, "RETURN [x IN range(1, 64) | toFloat(x)] AS emb, [1.0, 2.0] AS short, $p AS p",
               params={"p": "v"})
    assert out.rows == [{"emb": "<64 floats omitted>", "short": [1.0, 2.0], "p": "v"}]
    out = _run(graph, "UNWIND range(1, 200) AS i RETURN i, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' AS pad",
               max_bytes=2000)
    assert out.truncated and len(out.rows) < 200


def test_read_transaction_refuses_a_write_the_first_layer_missed(graph: MemoryGraph) -> None:
    """Layer 2 alone: a write run through the same READ session path is refused by the server."""
    import neo4j

    with (graph.ex.driver.session(database=graph.ex.database, default_access_mode=neo4j.READ_ACCESS) as s,
          pytest.raises(neo4j.exceptions.ClientError)):
        s.execute_read(lambda tx: tx.run("CREATE (:Pwned)").consume())
    assert rows(graph, "MATCH (n:Pwned) RETURN count(n) AS n")[0]["n"] == 0


def test_name_layer_alone_and_allowed_listing(graph: MemoryGraph) -> None:
    with pytest.raises(GuardedCypherError, match="apoc.load.json"):
        check_names("RETURN 1", {"args": {"Details": "apoc.load.json($u)"}, "children": []})
    check_names("CALL dbms.components()", None)
    out = _run(graph, "CALL db.labels() YIELD label RETURN label")
    assert out.rows and not out.truncated


def test_apoc_is_loaded_where_the_server_line_has_it(graph: MemoryGraph) -> None:
    """The APOC cases are meaningful on the 5.26 + APOC line: there, APOC must really be present."""
    version = graph.ex.capabilities.version
    names = rows(graph, "SHOW PROCEDURES YIELD name WHERE name STARTS WITH 'apoc.load' RETURN collect(name) AS n")
    if version.startswith("5."):
        assert "apoc.load.json" in names[0]["n"], f"Neo4j {version} should have APOC core loaded"


def test_cli_runs_reads_and_refuses_writes_in_one_line(graph: MemoryGraph, tmp_path: Path) -> None:
    rows(graph, "CREATE (:GuardSeed {x: 1})")
    proc = _m3graph(graph, tmp_path, "cypher", "MATCH (n:GuardSeed) WHERE n.x = $x RETURN n.x AS x",
                    "--param", "x=1")
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [{"x": 1}]
    before = _checksum(graph)
    proc = _m3graph(graph, tmp_path, "cypher", "MATCH (n:GuardSeed) DETACH DELETE n")
    assert proc.returncode == exit_codes.exit_code(GuardedCypherError("write", "x")), proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.lower().startswith("error:")]
    assert len(errors) == 1 and "cypher refused (write)" in errors[0], proc.stderr
    assert _checksum(graph) == before


APOC_CASES = [h for h in HOSTILE if "apoc" in h[1].lower()]


@pytest.fixture(scope="module")
def apoc_graph(apoc_settings: Settings, apoc_server: ServerStatus) -> Iterator[MemoryGraph]:  # noqa: F811
    """A store on the 5.26 + APOC line (its own fresh server home, so the test owns all of it)."""
    mg = MemoryGraph.connect(apoc_settings)
    yield mg
    mg.close()


def test_apoc_cases_are_refused_on_a_server_that_has_apoc(apoc_graph: MemoryGraph) -> None:
    """The APOC corpus must not pass vacuously: here every procedure it names exists and would run unguarded."""
    (listed,) = rows(apoc_graph, "SHOW PROCEDURES YIELD name WHERE name STARTS WITH 'apoc.' RETURN collect(name) AS n")
    for needed in ("apoc.load.json", "apoc.cypher.runWrite", "apoc.cypher.doIt", "apoc.periodic.iterate",
                   "apoc.export.json.all", "apoc.import.json"):
        assert needed in listed["n"], f"{needed} is not loaded on the APOC server"
    assert rows(apoc_graph, "RETURN apoc.version() AS v")[0]["v"]  # unguarded, APOC really runs
    rows(apoc_graph, "CREATE (:GuardSeed {x: 1})-[:NEXT]->(:GuardSeed {x: 2})")
    before = _checksum(apoc_graph)
    assert len(APOC_CASES) >= 11
    for name, query, reason in APOC_CASES:
        with pytest.raises(GuardedCypherError) as info:
            _run(apoc_graph, query, timeout_s=5.0)
        assert info.value.reason == reason, f"{name}: {info.value}"
        assert _checksum(apoc_graph) == before, name
    assert rows(apoc_graph, "MATCH (n:Pwned) RETURN count(n) AS n")[0]["n"] == 0
