"""Guarded read-only Cypher: a corpus of hostile queries, each refused for its reason, the graph unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from m3graph.cli import exit_codes
from m3graph.errors import InvalidInputError
from m3graph.graphdb.guard_plan import PlanRefusal, check_plan
from m3graph.graphdb.guarded import GuardedCypherError, GuardLimits, VectorPolicy, run_guarded
from m3graph.graphdb.store import MemoryGraph
from m3graph.localserver.server import ServerStatus
from m3graph.settings import Settings
from tests.graph.test_cli_errors import _m3graph
from tests.helpers.graph import rows

CHECKSUM = ("MATCH (n) WITH count(n) AS nodes, collect(DISTINCT labels(n)) AS labels "
            "OPTIONAL MATCH ()-[r]->() RETURN nodes, labels, count(r) AS rels")
SCHEMA = "SHOW INDEXES YIELD name RETURN collect(name) AS names"

HOSTILE: list[tuple[str, str, str]] = [
    # writes (query type, then the READ transaction)
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
    ("set map", "MATCH (n:GuardSeed) SET n += {x: 3}", "write"),
    ("delete relationship", "MATCH (:GuardSeed)-[r:NEXT]->() DELETE r", "write"),
    # schema DDL
    ("schema index", "CREATE INDEX pwned IF NOT EXISTS FOR (n:Pwned) ON (n.x)", "write"),
    ("schema drop", "DROP INDEX memory_vector IF EXISTS", "write"),
    ("constraint", "CREATE CONSTRAINT pwned IF NOT EXISTS FOR (n:Pwned) REQUIRE n.x IS UNIQUE", "write"),
    ("drop constraint", "DROP CONSTRAINT memory_key IF EXISTS", "write"),
    ("vector index", "CREATE VECTOR INDEX pwned_v IF NOT EXISTS FOR (n:Pwned) ON n.v", "write"),
    # administration and transaction commands (planned as reads: refused by operator)
    ("terminate transactions", "SHOW TRANSACTIONS YIELD transactionId AS t, currentQuery AS q WHERE q CONTAINS "
     "'victim' TERMINATE TRANSACTIONS t YIELD message RETURN message", "operator"),
    ("terminate by id", "TERMINATE TRANSACTIONS 'neo4j-transaction-1'", "operator"),
    ("show transactions", "SHOW TRANSACTIONS YIELD currentQuery, parameters RETURN *", "operator"),
    ("show transactions plain", "SHOW TRANSACTIONS", "operator"),
    ("show settings", "SHOW SETTINGS", "operator"),
    ("show settings yield", "SHOW SETTINGS YIELD name, value WHERE name CONTAINS 'password' RETURN name, value",
     "operator"),
    ("load csv passwd", "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line", "operator"),
    ("load csv lower", "load csv with headers from 'http://127.0.0.1:7474/' as l return l", "operator"),
    ("db.stats.retrieve", "CALL db.stats.retrieve('QUERIES')", "procedure"),
    ("db.stats.stop", "CALL db.stats.stop('QUERIES')", "procedure"),
    ("db.stats.clear", "CALL db.stats.clear('QUERIES')", "procedure"),
    ("db.stats.collect", "CALL db.stats.collect('QUERIES')", "procedure"),
    ("db.create", "CALL db.createLabel('Pwned')", "procedure"),
    ("db.awaitIndexes", "CALL db.awaitIndexes(300)", "procedure"),
    ("db.ping", "CALL db.ping()", "procedure"),
    ("db.info", "CALL db.info()", "procedure"),
    ("dbms.listConfig", "CALL dbms.listConfig()", "procedure"),
    ("dbms.routing", "CALL dbms.routing.getRoutingTable({})", "procedure"),
    ("db.clearQueryCaches", "CALL db.clearQueryCaches()", "procedure"),
    ("show users", "SHOW USERS", "write"),
    ("show databases", "SHOW DATABASES", "write"),
    ("show current user", "SHOW CURRENT USER", "write"),
    ("create database", "CREATE DATABASE pwned IF NOT EXISTS", "write"),
    ("alter user", "ALTER CURRENT USER SET PASSWORD FROM 'a' TO 'b'", "write"),
    # vectors: never out, in any shape
    ("embedding plain", "MATCH (m:Memory) RETURN m.embedding", "vector"),
    ("embedding plus null", "MATCH (m:Memory) RETURN m.embedding + [null]", "vector"),
    ("embedding toString", "MATCH (m:Memory) RETURN [x IN m.embedding | toString(x)]", "vector"),
    ("embedding reduce", "MATCH (m:Memory) RETURN reduce(s = '', x IN m.embedding | s + toString(x) + ',')",
     "vector"),
    ("embedding slice", "MATCH (m:Memory) RETURN m.embedding[0..32], m.embedding[32..64]", "vector"),
    ("embedding unwind", "MATCH (m:Memory) UNWIND m.embedding AS x RETURN x", "vector"),
    ("embedding ints", "MATCH (m:Memory) UNWIND m.embedding AS x RETURN toInteger(x * 1e6)", "vector"),
    ("embedding backticks", "MATCH (m:Memory) RETURN m.`embedding`", "vector"),
    ("embedding literal key", "MATCH (m:Memory) RETURN m['embedding']", "vector"),
    ("embedding in where", "MATCH (m:Memory) WHERE m.embedding[0] > 0.5 RETURN m.memory_id", "vector"),
    ("centroid", "MATCH (f:Face) RETURN f.centroid", "vector"),
    ("centroid_unit", "MATCH (v:Voice) RETURN v.centroid_unit[0..10]", "vector"),
    ("exemplars", "MATCH (f:Face) RETURN f.exemplars", "vector"),
    ("face obs embedding", "MATCH (o:FaceObs) RETURN size([x IN o.embedding WHERE x > 0])", "vector"),
    ("cosine oracle", "MATCH (m:Memory) RETURN vector.similarity.cosine(m.embedding, $v)", "vector"),
    ("map projection all", "MATCH (m:Memory) RETURN m{.*}", "vector"),
    ("map projection key", "MATCH (f:Face) RETURN f{.entity_id, .centroid}", "vector"),
    ("properties", "MATCH (m:Memory) RETURN properties(m)", "vector"),
    ("properties order oracle", "MATCH (m:Memory) RETURN m.memory_id ORDER BY properties(m)", "vector"),
    ("dynamic param key", "MATCH (m:Memory) RETURN m[$k]", "dynamic"),
    ("dynamic computed key", "MATCH (m:Memory) WITH m, 'embed' + 'ding' AS k RETURN m[k]", "dynamic"),
    ("dynamic keys loop", "MATCH (m:Memory) RETURN [k IN keys(m) | m[k]]", "dynamic"),
    ("dynamic index", "MATCH (m:Memory) RETURN m.text[toInteger($i)]", "dynamic"),
    ("alias named like a vector", "MATCH (m:Memory) RETURN m.text AS embedding", "vector"),
    ("reserved parameter name", "RETURN $autostring_0", "param"),
    # procedures and functions not on the list (APOC: refused by name on the APOC line, unknown on 2026)
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
    ("apoc toJson node", "MATCH (m:Memory) RETURN apoc.convert.toJson(m)", "procedure"),
    ("apoc map values", "MATCH (m:Memory) RETURN apoc.map.values(m, keys(m))", "procedure"),
    ("dbms procedure", "CALL dbms.setConfigValue('db.logs.query.enabled', 'OFF')", "procedure"),
    ("dbms security", "CALL dbms.security.createUser('x', 'y', false)", "procedure"),
    # parsing tricks: the server decides what one statement is
    ("two statements", "MATCH (n) RETURN count(n); CREATE (:Pwned)", "syntax"),
    ("comment hides write", "MATCH (n) RETURN n // harmless\nCREATE (:Pwned)", "syntax"),
    ("block comment write", "/* read only */ CREATE (:Pwned)", "write"),
    ("unicode lookalike", "MATCH (n) RETURN n \u037e CREATE (:Pwned)", "syntax"),
    ("fullwidth keyword", "\uff23REATE (:Pwned)", "syntax"),
    # vector oracles: a caller's vector scored against stored ones reads them back (issue 37)
    ("vector index probe", "CALL db.index.vector.queryNodes('memory_embedding', 1000, $v) YIELD node, score "
     "RETURN node.memory_id, score", "vector"),
    ("vector relationship probe", "CALL db.index.vector.queryRelationships('memory_embedding', 10, $v) "
     "YIELD relationship, score RETURN score", "vector"),
    ("similarity of parameters", "RETURN vector.similarity.cosine($v, $v)", "vector"),
    # expressions the server neither memory-tracks nor interrupts (issue 37): refused before they run
    ("filter over 10^9", "RETURN size([x IN range(1, 1000000000) WHERE x % 7 = 0]) AS n", "bound"),
    ("string doubling", "RETURN size(reduce(s = 'a', i IN range(1, 30) | s + s))", "bound"),
    ("reduce over 10^9", "RETURN reduce(s = 0, i IN range(1, 1000000000) | s + i)", "bound"),
    ("any over 2*10^9", "RETURN any(x IN range(1, 2000000000) WHERE x < 0)", "bound"),
    # resources
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


# Distinctive vector values: any trace of them in an output (as floats, ints, strings, slices) contains "9137".
MARK = "9137"


def _vector(dim: int) -> list[float]:
    return [0.9137 + i * 1e-6 for i in range(dim)]


def _seed(mg: MemoryGraph) -> None:
    """Guard seeds plus one node of each vector-holding label with distinctive vectors (owned by this test)."""
    s = mg.settings
    rows(mg, "CREATE (:GuardSeed {x: 1})-[:NEXT]->(:GuardSeed {x: 2}) "
             "CREATE (m:Memory {memory_id: 'guard-m', text: 'the kettle boils', kind: 'episodic', video_id: 'gv', "
             "clip_index: 0, embedding: $t, embedding_model: 'mini'}) "
             "CREATE (f:Face {entity_id: 990001, centroid: $f, centroid_unit: $f, centroid_norm: 1.0, "
             "exemplars: $f, n_exemplars: 1}) "
             "CREATE (o:FaceObs {obs_key: 'guard-o', video_id: 'gv', embedding: $f})-[:OF]->(f) "
             "CREATE (m)-[:MENTIONS {weight: 1.0}]->(f)",
         t=_vector(s.memory.text_dim), f=_vector(s.identity.face_dim))


PARAMS = {"k": "embedding", "i": 0}


@pytest.mark.parametrize(("name", "query", "reason"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_query_is_refused_and_the_graph_unchanged(graph: MemoryGraph, name: str, query: str,
                                                        reason: str) -> None:
    _seed(graph)
    before = _checksum(graph)
    params: dict[str, object] = {**PARAMS, "v": _vector(graph.settings.memory.text_dim)}
    if "$autostring_0" in query:
        params["autostring_0"] = "embedding"
    with pytest.raises(GuardedCypherError) as info:
        _run(graph, query, params=params, timeout_s=2.0)
    assert info.value.reason == reason, str(info.value)
    assert "\n" not in str(info.value) and MARK not in str(info.value)
    assert _checksum(graph) == before


def test_the_hostile_corpus_is_large_and_covers_every_layer() -> None:
    assert len(HOSTILE) >= 60
    assert {r for _, _, r in HOSTILE} >= {"write", "operator", "procedure", "vector", "dynamic", "syntax",
                                          "timeout", "empty", "param", "bound"}


# Forms that must be refused or return no vector value in any shape.
VECTOR_FORMS = [
    "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN m",
    "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN collect(m) AS c, [m] AS l, {x: m} AS mp",
    "MATCH p = (m:Memory {memory_id: 'guard-m'})-[:MENTIONS]->(f:Face) RETURN p, nodes(p), relationships(p)",
    "MATCH (f:Face {entity_id: 990001})<-[:OF]-(o:FaceObs) RETURN f, o",
    "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN properties(m)",
    "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN m{.*}",
    "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN m[$k]",
    "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN m.embedding + [null]",
    "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN [x IN m.embedding | toString(x)]",
    "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN reduce(s = '', x IN m.embedding | s + toString(x))",
    "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN m.embedding[0..32]",
    "MATCH (m:Memory {memory_id: 'guard-m'}) UNWIND m.embedding AS x RETURN x",
    "MATCH (m:Memory {memory_id: 'guard-m'}) UNWIND m.embedding AS x RETURN toInteger(x * 1e6)",
    "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN keys(m) AS k, m.text AS t",
]


def test_no_vector_value_leaves_in_any_shape(graph: MemoryGraph) -> None:
    _seed(graph)
    outcomes = []
    for query in VECTOR_FORMS:
        try:
            out = _run(graph, query, params=PARAMS)
        except GuardedCypherError as exc:
            assert MARK not in str(exc), query
            outcomes.append("refused")
            continue
        text = json.dumps(out.rows)
        assert MARK not in text, f"{query} leaked a vector value: {text[:200]}"
        assert "embedding" not in text.replace('"embedding_model"', "") or "keys(m)" in query, query
        outcomes.append("allowed")
    # whole entities come back (vector keys stripped by the serializer); every laundering form is refused
    assert outcomes[:4] == ["allowed"] * 4 and outcomes[-1] == "allowed"
    assert outcomes[4:-1] == ["refused"] * (len(VECTOR_FORMS) - 5)
    out = _run(graph, VECTOR_FORMS[0])
    assert out.rows[0]["m"]["text"] == "the kettle boils"
    assert "embedding" not in out.rows[0]["m"]
    face = _run(graph, VECTOR_FORMS[3]).rows[0]["f"]
    assert face["centroid_norm"] == 1.0 and not {"centroid", "centroid_unit", "exemplars"} & set(face)


def test_terminate_and_show_transactions_leave_another_session_alone(graph: MemoryGraph) -> None:
    """A second session holds an open write transaction; the guard must neither list nor terminate it."""
    before = _checksum(graph)
    with graph.ex.driver.session(database=graph.ex.database) as victim:
        tx = victim.begin_transaction()
        tx.run("CREATE (:GuardVictim {note: 'victim'})").consume()
        for query in (HOSTILE_BY_NAME["terminate transactions"], HOSTILE_BY_NAME["terminate by id"],
                      HOSTILE_BY_NAME["show transactions"]):
            with pytest.raises(GuardedCypherError) as info:
                _run(graph, query)
            assert info.value.reason == "operator", str(info.value)
        tx.commit()  # still alive: it commits
    assert rows(graph, "MATCH (n:GuardVictim) RETURN count(n) AS n")[0]["n"] == 1
    assert _checksum(graph)[0] == before[0] + 1


HOSTILE_BY_NAME = {name: query for name, query, _ in HOSTILE}


def test_analyst_reads_still_work(graph: MemoryGraph) -> None:
    _seed(graph)
    v = _vector(graph.settings.memory.text_dim)
    assert _run(graph, "MATCH (m:Memory) WHERE m.video_id = $v RETURN m.text AS t",
                params={"v": "gv"}).rows == [{"t": "the kettle boils"}]
    assert _run(graph, "MATCH (m:Memory)-[:MENTIONS]->(f:Face) RETURN count(*) AS n").rows == [{"n": 1}]
    assert {"label": "Memory"} in _run(graph, "CALL db.labels() YIELD label RETURN label").rows
    assert _run(graph, "CALL dbms.components() YIELD name RETURN name").rows[0]["name"] == "Neo4j Kernel"
    names = {r["name"] for r in _run(graph, "SHOW INDEXES YIELD name RETURN name").rows}
    assert "memory_embedding" in names
    assert _run(graph, "SHOW CONSTRAINTS YIELD name RETURN count(*) AS n").rows[0]["n"] > 0
    assert _run(graph, "SHOW PROCEDURES YIELD name RETURN count(*) AS n").rows[0]["n"] > 0
    assert _run(graph, "SHOW FUNCTIONS YIELD name RETURN count(*) AS n").rows[0]["n"] > 0
    with pytest.raises(GuardedCypherError) as info:  # an oracle (issue 37): search by text with the search tools
        _run(graph, "CALL db.index.vector.queryNodes('memory_embedding', 3, $v) YIELD node, score "
                    "RETURN node.memory_id AS id, score", params={"v": v})
    assert info.value.reason == "vector"
    ft = _run(graph, "CALL db.index.fulltext.queryNodes('memory_text', 'kettle') YIELD node, score "
                     "RETURN node.memory_id AS id, score").rows
    assert [r["id"] for r in ft] == ["guard-m"]
    out = _run(graph, "MATCH (m:Memory) OPTIONAL MATCH (m)-[:MENTIONS]->(f) WITH m, collect(f.entity_id) AS fs "
                      "RETURN m.memory_id AS id, fs, left(m.text, 3) AS head, [m.kind, m.text][0] AS k0, "
                      "[m.kind, m.text][0..1] AS k01 ORDER BY id LIMIT 5")
    assert out.rows == [{"id": "guard-m", "fs": [990001], "head": "the", "k0": "episodic", "k01": ["episodic"]}]
    assert _run(graph, "RETURN 'load csv' AS a, 'dbms.x(' AS b").rows == [{"a": "load csv", "b": "dbms.x("}]


def test_caps_apply_while_rows_arrive(graph: MemoryGraph) -> None:
    import time

    started = time.monotonic()
    out = _run(graph, "UNWIND range(1, 100000000) AS i RETURN i", max_rows=1000)
    assert len(out.rows) == 1000 and out.truncated and out.notes == ["truncated at 1000 rows"]
    assert time.monotonic() - started < 5, "the rest of the rows was computed, not discarded"
    out = _run(graph, "RETURN [x IN range(1, 64) | toFloat(x)] AS emb, [1.0, 2.0] AS short, $p AS p",
               params={"p": "v"})
    assert out.rows == [{"emb": "<64 floats omitted>", "short": [1.0, 2.0], "p": "v"}]
    out = _run(graph, "UNWIND range(1, 200) AS i RETURN i, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' AS pad",
               max_bytes=2000)
    assert out.truncated and 0 < len(out.rows) < 200 and len(json.dumps(out.rows)) <= 2000


# 10^8 longs need about 3 GB, twice the test server's shared transaction pool (70 % of its 2 GB heap): without a
# per-transaction cap this query filled the pool and other sessions' transactions failed until it ended.
MEMORY_HOG = "UNWIND range(1, 100000000) AS x WITH collect(x) AS xs RETURN size(xs)"


def _memory_cap(mg: MemoryGraph) -> str:
    """The server's per-transaction cap, read through a plain session (the guard refuses SHOW SETTINGS)."""
    (row,) = rows(mg, "SHOW SETTINGS YIELD name, value WHERE name = 'db.memory.transaction.max' RETURN value")
    return str(row["value"])


def test_a_query_over_the_memory_cap_is_stopped_once_while_another_session_commits(graph: MemoryGraph) -> None:
    """The cap stops the hog alone, at once, with a message naming memory; a concurrent writer never fails."""
    import threading
    import time

    cap_mb = graph.settings.local.tx_memory_max_mb
    if not graph.settings.uses_local_server:
        pytest.skip("NEO4J_URI is set: that server's db.memory.transaction.max is its operator's")
    assert _memory_cap(graph) == f"{cap_mb}.00MiB"  # the launcher passed local.tx_memory_max_mb
    before = _checksum(graph)
    done, failures, commits = threading.Event(), [], []

    def writer() -> None:  # a product-shaped write transaction, over and over, in its own session
        while not done.is_set():
            try:
                with graph.ex.driver.session(database=graph.ex.database) as session, \
                        session.begin_transaction() as tx:
                    tx.run("CREATE (:MemCapProbe {i: $i, pad: $pad})", i=len(commits), pad=["x" * 100] * 1000)
                    time.sleep(0.05)
                    tx.commit()
                commits.append(time.monotonic())
            except Exception as exc:  # recorded: the assertion below names it
                failures.append(f"{type(exc).__name__}: {str(exc)[:200]}")

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        with pytest.raises(GuardedCypherError) as info:
            _run(graph, MEMORY_HOG, timeout_s=120.0)
    finally:
        elapsed = time.monotonic() - started
        done.set()
        thread.join(timeout=30)
    message = str(info.value)
    assert info.value.reason == "memory", message
    assert "db.memory.transaction.max" in message and f"{cap_mb}.0 MiB" in message and "\n" not in message
    assert elapsed < 60, f"{elapsed:.1f} s: a memory refusal must not be retried"
    assert not failures, f"a concurrent transaction failed while the hog ran: {failures[0]}"
    assert [t for t in commits if t < started + elapsed], "no concurrent write committed while the hog ran"
    n = len(commits)
    assert rows(graph, "MATCH (p:MemCapProbe) WITH count(p) AS n, collect(p) AS ps "
                       "FOREACH (p IN ps | DETACH DELETE p) RETURN n")[0]["n"] == n
    assert _checksum(graph) == before


@pytest.mark.parametrize(("kw", "says"), [
    ({"timeout_s": 0}, "timeout"), ({"timeout_s": -1}, "timeout"), ({"timeout_s": 301}, "timeout"),
    ({"timeout_s": float("nan")}, "timeout"), ({"max_rows": 0}, "max_rows"), ({"max_rows": -1}, "max_rows"),
    ({"max_rows": 100_001}, "max_rows"), ({"max_rows": 1.5}, "max_rows"), ({"max_bytes": 0}, "max_bytes"),
])
def test_limits_are_validated_before_anything_runs(kw: dict[str, object], says: str) -> None:
    with pytest.raises(InvalidInputError, match=says):
        GuardLimits(**kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("args", [["cypher", "RETURN 1", "--timeout", "0"], ["cypher", "RETURN 1", "--timeout", "-1"],
                                  ["cypher", "RETURN 1", "--max-rows", "0"], ["cypher", "RETURN 1", "--max-rows", "-1"],
                                  ["mcp", "--cypher-timeout", "-5"], ["mcp", "--cypher-timeout", "0"],
                                  ["mcp", "--cypher-max-rows", "0"]])
def test_cli_refuses_bad_limits_in_one_line(graph: MemoryGraph, tmp_path: Path, args: list[str]) -> None:
    proc = _m3graph(graph, tmp_path, *args)
    assert proc.returncode == exit_codes.USAGE, (proc.returncode, proc.stderr)
    errors = [line for line in proc.stderr.splitlines() if line.lower().startswith("error:")]
    assert len(errors) == 1 and "must be" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_read_transaction_refuses_a_write_the_first_layer_missed(graph: MemoryGraph) -> None:
    """Layer 2 alone: a write run through the same READ session path is refused by the server."""
    import neo4j

    with (graph.ex.driver.session(database=graph.ex.database, default_access_mode=neo4j.READ_ACCESS) as s,
          pytest.raises(neo4j.exceptions.ClientError)):
        tx = s.begin_transaction()
        try:
            tx.run("CREATE (:Pwned)").consume()
        finally:
            tx.close()
    assert rows(graph, "MATCH (n:Pwned) RETURN count(n) AS n")[0]["n"] == 0


def test_plan_layer_alone_refuses_unknown_operators_and_calls() -> None:
    policy = VectorPolicy()
    for plan, reason in [
        ({"operatorType": "ProduceResults@neo4j", "args": {}, "children": [
            {"operatorType": "SomethingNew@neo4j", "args": {}, "children": []}]}, "operator"),
        ({"operatorType": "Projection@neo4j", "args": {"Details": "apoc.load.json($u) AS x"}}, "procedure"),
        ({"operatorType": "Projection@neo4j", "args": {"Details": "myFunc(x) AS y"}}, "function"),
        ({"operatorType": "ProcedureCall@neo4j", "args": {"Details": "db.stats.retrieve($a) :: (x :: MAP)"}},
         "procedure"),
        ({"operatorType": "Projection@neo4j", "args": {"Details": "n[$key] AS y"}}, "dynamic"),
        ({"operatorType": "Projection@neo4j", "args": {"Details": "cache[n.centroid_unit] AS y"}}, "vector"),
        (None, "plan"),
    ]:
        with pytest.raises(PlanRefusal) as info:
            check_plan(plan, policy)
        assert info.value.reason == reason, (plan, info.value)
    check_plan({"operatorType": "Projection@neo4j", "args": {"Details": "cache[n.text][$autoint_0..$autoint_1] "
                                                                        "AS y, toUpper(n.kind) AS k"}}, policy)


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
def apoc_graph(apoc_settings: Settings, apoc_server: ServerStatus) -> Iterator[MemoryGraph]:
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
    # 5.26 has the per-transaction memory cap under the same name (the launcher refuses unknown names)
    assert _memory_cap(apoc_graph) == f"{apoc_graph.settings.local.tx_memory_max_mb}.00MiB"
    rows(apoc_graph, "CREATE (:GuardSeed {x: 1})-[:NEXT]->(:GuardSeed {x: 2})")
    before = _checksum(apoc_graph)
    assert len(APOC_CASES) >= 13
    for name, query, reason in APOC_CASES:
        with pytest.raises(GuardedCypherError) as info:
            _run(apoc_graph, query, timeout_s=5.0)
        assert info.value.reason == reason, f"{name}: {info.value}"
        assert _checksum(apoc_graph) == before, name
    assert rows(apoc_graph, "MATCH (n:Pwned) RETURN count(n) AS n")[0]["n"] == 0
