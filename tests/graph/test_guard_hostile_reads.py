"""Read-only means harmless (issue 37): no vector through an oracle, no read that kills the server or outlives its
timeout, no row that is decoded before the byte cap sees it. Each case runs on the real server; each refusal is
asserted with an unchanged graph and a second session that still answers afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from m3graph.cli import exit_codes
from m3graph.graphdb.guard_builds import RANGE_SPAN_MAX
from m3graph.graphdb.guard_ending import METADATA_KEY, end_transaction, new_token
from m3graph.graphdb.guarded import GuardedCypherError
from m3graph.graphdb.store import MemoryGraph
from m3graph.service.guarded import GuardLimits, read_cypher
from tests.graph.test_cli_errors import ENTRY, _m3graph
from tests.graph.test_guarded_cypher import _checksum, _run
from tests.helpers.graph import rows

PROBE = ("CALL db.index.vector.queryNodes($index, 10, $v) YIELD node, score "
         "RETURN node.memory_id AS id, node.entity_id AS entity, score")
SEARCH = ("CYPHER 25 MATCH (m:Memory) SEARCH m IN (VECTOR INDEX memory_embedding FOR $v LIMIT 10) SCORE AS s "
          "RETURN m.memory_id AS id, s")
# Every other form of the same oracle: a caller's vector scored against a stored one.
ORACLES = [
    PROBE,
    "CALL db.index.vector.queryRelationships($index, 10, $v) YIELD relationship, score RETURN score",
    "MATCH (m:Memory {memory_id: 'probe-m'}) RETURN vector.similarity.cosine($v, $v) AS s, m.memory_id",
    "RETURN vector.similarity.euclidean($v, $v) AS s",
]
ORACLES_2026 = [
    SEARCH,
    "CYPHER 25 RETURN vector_distance(vector($v, 4, FLOAT32), vector($v, 4, FLOAT32), COSINE) AS d",
]


def _unit(dim: int, seed: int) -> list[float]:
    v = np.random.default_rng(seed).standard_normal(dim)
    return [float(x) for x in v / np.linalg.norm(v)]


def _seed_vectors(mg: MemoryGraph) -> tuple[list[float], list[float]]:
    """One Memory and one Face with random unit vectors, indexed before the probes run."""
    text, face = _unit(mg.settings.memory.text_dim, 1), _unit(mg.settings.identity.face_dim, 2)
    rows(mg, "CREATE (:Memory {memory_id: 'probe-m', text: 'probe', kind: 'episodic', video_id: 'pv', "
             "clip_index: 0, embedding: $t}) "
             "CREATE (:Face {entity_id: 990077, centroid: $f, centroid_unit: $f, centroid_norm: 1.0})", t=text, f=face)
    rows(mg, "CALL db.awaitIndexes(300)")
    return text, face


def _basis(dim: int, i: int) -> list[float]:
    return [1.0 if j == i else 0.0 for j in range(dim)]


def _another_session_answers(mg: MemoryGraph) -> None:
    with mg.ex.driver.session(database=mg.ex.database) as session:
        assert session.run("RETURN 41 + 1 AS n").single()["n"] == 42  # type: ignore[index]


# ---------------------------------------------------------------------------------------------- 1. no vector oracle


def test_basis_probes_read_vectors_back_through_the_driver_but_never_through_the_guard(graph: MemoryGraph) -> None:
    text, face = _seed_vectors(graph)
    before = _checksum(graph)
    for index, key, vector in (("memory_embedding", "id", text), ("face_centroid", "entity", face)):
        dims = range(6)
        # The attack works on the raw driver: score = (1 + cos) / 2 with a unit basis vector is one coordinate.
        read = []
        for i in dims:
            with graph.ex.driver.session(database=graph.ex.database) as session:
                hits = [r.data() for r in session.run(PROBE, index=index, v=_basis(len(vector), i))]
            (hit,) = [h for h in hits if h[key] in ("probe-m", 990077)]
            read.append(2 * hit["score"] - 1)
        assert np.allclose(read, vector[:6], atol=1e-5), (index, read, vector[:6])
        # ... and the guard refuses every probe, naming the oracle.
        with pytest.raises(GuardedCypherError) as info:
            _run(graph, PROBE, params={"index": index, "v": _basis(len(vector), 0)})
        assert info.value.reason == "vector" and "db.index.vector.queryNodes" in str(info.value)
    assert _checksum(graph) == before
    _another_session_answers(graph)


def test_every_form_of_the_oracle_is_refused(graph: MemoryGraph) -> None:
    text, _ = _seed_vectors(graph)
    forms = ORACLES + (ORACLES_2026 if not graph.ex.capabilities.version.startswith("5.") else [])
    for query in forms:
        with pytest.raises(GuardedCypherError) as info:
            _run(graph, query, params={"index": "memory_embedding", "v": text})
        assert info.value.reason == "vector", (query, str(info.value))
    # the MCP tool's path (the service `read_cypher` that `m3graph mcp` serves over stdio and HTTP)
    with pytest.raises(GuardedCypherError) as info:
        read_cypher(graph, PROBE, {"index": "memory_embedding", "v": text}, GuardLimits())
    assert info.value.reason == "vector"


def test_the_cli_refuses_the_probe_in_one_line(graph: MemoryGraph, tmp_path: Path) -> None:
    text, _ = _seed_vectors(graph)
    proc = _m3graph(graph, tmp_path, "cypher", PROBE, "--param", "index=memory_embedding",
                    "--param", f"v={json.dumps(_basis(len(text), 0))}")
    assert proc.returncode == exit_codes.exit_code(GuardedCypherError("vector", "x")), proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.lower().startswith("error:")]
    assert len(errors) == 1 and "cypher refused (vector)" in errors[0], proc.stderr
    assert "score" not in proc.stdout


# ---------------------------------------------------------------------------------------------- 2. bounded builds
# (name, query): the issue's four reads first, then the shapes that build the same without a big range.
UNBOUNDED = [
    ("filter over 10^9", "RETURN size([x IN range(1, 1000000000) WHERE x % 7 = 0]) AS n"),
    ("string doubling", "RETURN size(reduce(s = 'a', i IN range(1, 30) | s + s)) AS n"),
    ("reduce over 10^9", "RETURN reduce(s = 0, i IN range(1, 1000000000) | s + i) AS n"),
    ("any over 2*10^9", "RETURN any(x IN range(1, 2000000000) WHERE x < 0) AS n"),
    ("list doubling", "RETURN size(reduce(l = [1], i IN range(1, 40) | l + l)) AS n"),
    ("range from a variable", "WITH 1000000000 AS n RETURN size([x IN range(1, n) | x]) AS k"),
    ("range from arithmetic", "RETURN size(range(1, 10 * 100000000)) AS n"),
    ("range from a parameter", "RETURN size([x IN range(1, $n) | x]) AS k"),
    ("nested comprehension", "RETURN size([x IN range(1, 1000) | [y IN range(1, 1000) | x * y]]) AS n"),
    ("nested quantifier", "RETURN any(x IN range(1, 1000) WHERE all(y IN range(1, 1000) WHERE y > x)) AS n"),
    ("replace squares", "RETURN size(replace(replace($s, '', $s), '', $s)) AS n"),
    ("replace in reduce", "RETURN size(reduce(s = 'ab', i IN range(1, 40) | replace(s, 'a', 'aa'))) AS n"),
    ("reduce over a collected list", "UNWIND range(1, 1000000) AS i WITH collect(toString(i)) AS xs "
     "RETURN size(reduce(s = '', x IN xs | s + x)) AS n"),
    ("copy of a collected list", "UNWIND range(1, 5000000) AS i WITH collect(i) AS xs "
     "RETURN size([x IN xs | toString(x) + $s]) AS n"),
    ("big value per element", "RETURN size([x IN range(1, 1000) | $big + toString(x)]) AS n"),
    ("backticked range", "RETURN size([x IN `range`(1, 1000000000) | x]) AS n"),
]
PARAMS = {"n": 1_000_000_000, "s": "ab", "big": "x" * 10_000}


@pytest.mark.parametrize(("name", "query"), UNBOUNDED, ids=[u[0] for u in UNBOUNDED])
def test_reads_that_build_without_bound_are_refused_before_they_run(graph: MemoryGraph, name: str,
                                                                   query: str) -> None:
    rows(graph, "CREATE (:GuardSeed {x: 1})-[:NEXT]->(:GuardSeed {x: 2})")
    before = _checksum(graph)
    started = time.monotonic()
    with pytest.raises(GuardedCypherError) as info:
        _run(graph, query, params=PARAMS, timeout_s=10.0)
    assert info.value.reason == "bound", str(info.value)
    assert time.monotonic() - started < 5, "refused from the plan, not stopped after running"
    assert _checksum(graph) == before
    _another_session_answers(graph)


def test_the_issues_reads_leave_the_server_up_and_its_heap_unspent(graph: MemoryGraph) -> None:
    """All four of the issue's reads, one after another, then a second session answers and the server process is
    the same one (the 10^9 filter used to end it with OutOfMemoryError)."""
    pid = _server_pid(graph)
    for _, query in UNBOUNDED[:4]:
        with pytest.raises(GuardedCypherError):
            _run(graph, query, timeout_s=10.0)
    _another_session_answers(graph)
    assert _server_pid(graph) == pid


def _server_pid(mg: MemoryGraph) -> int | None:
    ready = mg.settings.local.home / "ready"
    if not mg.settings.uses_local_server or not ready.exists():
        return None
    return int(ready.read_text().split("pid=")[1].split()[0])


BOUNDED = [
    ("small range", f"RETURN size([x IN range(1, {RANGE_SPAN_MAX}) WHERE x % 7 = 0]) AS n",
     {"n": RANGE_SPAN_MAX // 7}),
    ("parameter bounds", "RETURN [x IN range($a, $b) | x * 2] AS l", {"l": [2, 4, 6]}),
    ("sum over a small range", "RETURN reduce(s = 0, i IN range(1, 100) | s + i) AS n", {"n": 5050}),
    ("join", "RETURN reduce(s = '', x IN ['a', 'b', 'c'] | s + x + ',') AS j", {"j": "a,b,c,"}),
    ("path weights", "MATCH p = (:GuardSeed {x: 1})-[:NEXT]->(:GuardSeed) "
     "RETURN reduce(w = 0, n IN nodes(p) | w + n.x) AS w", {"w": 3}),
    ("labels", "MATCH (n:GuardSeed {x: 1}) RETURN any(l IN labels(n) WHERE l = 'GuardSeed') AS ok", {"ok": True}),
    ("unwind a big range", "UNWIND range(1, 1000000000) AS i WITH i LIMIT 3 RETURN collect(i) AS c",
     {"c": [1, 2, 3]}),
    ("unwind from size", "WITH ['a', 'b'] AS xs UNWIND range(0, size(xs) - 1) AS i RETURN collect(i) AS c",
     {"c": [0, 1]}),
    ("range in a string", "RETURN 'range(1, 1000000000)' AS t", {"t": "range(1, 1000000000)"}),
    ("range in a comment", "RETURN 1 AS one // range(1, 1000000000)", {"one": 1}),
]


@pytest.mark.parametrize(("name", "query", "expected"), BOUNDED, ids=[b[0] for b in BOUNDED])
def test_bounded_builds_still_run(graph: MemoryGraph, name: str, query: str, expected: dict[str, object]) -> None:
    rows(graph, "CREATE (:GuardSeed {x: 1})-[:NEXT]->(:GuardSeed {x: 2})")
    assert _run(graph, query, params={"a": 1, "b": 3}).rows == [expected]


def test_query_and_parameter_sizes_are_bounded(graph: MemoryGraph) -> None:
    with pytest.raises(GuardedCypherError) as info:
        _run(graph, "RETURN 1 AS one" + " " * 20_000)
    assert info.value.reason == "size"
    with pytest.raises(GuardedCypherError) as info:
        _run(graph, "RETURN size($p) AS n", params={"p": "x" * 1_100_000})
    assert info.value.reason == "size"


# ---------------------------------------------------------------------------------------------- 3. timeouts end work
CARTESIAN = ("UNWIND range(1, 100000) AS a UNWIND range(1, 100000) AS b WITH a, b WHERE a * b = -1 "
             "RETURN count(*) AS n")


def _running(mg: MemoryGraph, marker: str) -> int:
    (row,) = rows(mg, "SHOW TRANSACTIONS YIELD currentQuery WHERE currentQuery CONTAINS $m "
                      "AND NOT currentQuery STARTS WITH 'SHOW' RETURN count(*) AS n", m=marker)
    return int(row["n"])


def test_the_timeout_stops_the_server_side_work_within_twice_the_timeout(graph: MemoryGraph) -> None:
    timeout = 1.5
    started = time.monotonic()
    with pytest.raises(GuardedCypherError) as info:
        _run(graph, CARTESIAN + " // guard-timeout-probe", timeout_s=timeout)
    elapsed = time.monotonic() - started
    assert info.value.reason == "timeout", str(info.value)
    assert elapsed < 2 * timeout, f"{elapsed:.1f} s for a {timeout} s timeout"
    assert _running(graph, "guard-timeout-probe") == 0, "the transaction outlived the refusal"
    _another_session_answers(graph)


def test_a_client_that_goes_away_leaves_no_work_running(graph: MemoryGraph, tmp_path: Path) -> None:
    """`m3graph cypher` killed while its query runs: the server ends that transaction within seconds."""
    marker = "guard-gone-probe"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))}
    env |= {"NEO4J_URI": graph.settings.bolt_uri, "M3GRAPH_NEO4J_USER": graph.settings.neo4j_user,
            "M3GRAPH_NEO4J_PASSWORD": graph.settings.neo4j_password.get_secret_value(),
            "M3GRAPH_DATA_DIR": str(tmp_path / "data"), "OMP_WAIT_POLICY": "PASSIVE"}
    proc = subprocess.Popen([*ENTRY, "cypher", f"{CARTESIAN} // {marker}", "--timeout", "120"], cwd=tmp_path,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while _running(graph, marker) == 0:
            assert proc.poll() is None and time.monotonic() < deadline, "the query never started"
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    killed = time.monotonic()
    while _running(graph, marker) and time.monotonic() - killed < 30:
        time.sleep(0.2)
    assert _running(graph, marker) == 0, "the transaction kept running after its client was killed"
    assert time.monotonic() - killed < 10
    _another_session_answers(graph)


def test_the_guard_ends_a_tagged_transaction_and_waits_until_the_server_lists_it_no_more(graph: MemoryGraph) -> None:
    """The step behind the timeout: only the transaction carrying the run's token ends, and `end_transaction` says
    so only once the server no longer lists it."""
    marker, token, other = "guard-ending-probe", new_token(), new_token()
    failures: list[BaseException] = []

    def hold() -> None:
        try:
            with (graph.ex.driver.session(database=graph.ex.database) as session,
                  session.begin_transaction(timeout=120, metadata={METADATA_KEY: token}) as tx):
                tx.run(f"{CARTESIAN} // {marker}").consume()
        except Exception as exc:  # the termination this test causes
            failures.append(exc)

    worker = threading.Thread(target=hold, daemon=True)
    worker.start()
    deadline = time.monotonic() + 60
    while _running(graph, marker) == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _running(graph, marker) == 1
    assert end_transaction(graph.ex.driver, graph.ex.database, other, time.monotonic() + 1) is True
    assert _running(graph, marker) == 1, "a transaction with another token was ended"
    assert end_transaction(graph.ex.driver, graph.ex.database, token, time.monotonic() + 30) is True
    assert _running(graph, marker) == 0
    worker.join(timeout=30)
    assert not worker.is_alive() and failures, "the tagged transaction ran on"
    _another_session_answers(graph)


# ---------------------------------------------------------------------------------------------- 4. caps before memory
# 16 comprehensions of 1,000 references to one 1 kB parameter: a 16 MB record the server builds cheaply (shared
# references), the largest shape the bounds above allow.
WIDE = "UNWIND range(1, 3) AS k RETURN k, " + " + ".join(["[i IN range(1, 1000) | $s]"] * 16) + " AS l"


def test_a_record_over_the_byte_cap_is_refused_before_it_is_decoded(graph: MemoryGraph) -> None:
    tracemalloc.start()
    try:
        out = _run(graph, WIDE, params={"s": "x" * 1000}, max_bytes=1_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.rows == [] and out.truncated, out
    assert "refused while it arrived, before it was decoded" in out.notes[0]
    assert peak < 4_000_000, f"{peak / 1e6:.1f} MB allocated for a 16 MB record: it was decoded"
    _another_session_answers(graph)  # the pool replaced the connection the cap closed
    small = _run(graph, "UNWIND range(1, 3) AS k RETURN k, [i IN range(1, 10) | $s] AS l", params={"s": "y"})
    assert [r["k"] for r in small.rows] == [1, 2, 3] and not small.truncated


def test_the_cli_stays_small_on_a_wide_record(graph: MemoryGraph, tmp_path: Path) -> None:
    """Peak RSS of `m3graph cypher` on the 16 MB record against `RETURN 1` (GNU time's maximum resident size)."""
    if not Path(TIME).exists():
        pytest.skip(f"{TIME} is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))}
    env |= {"NEO4J_URI": graph.settings.bolt_uri, "M3GRAPH_NEO4J_USER": graph.settings.neo4j_user,
            "M3GRAPH_NEO4J_PASSWORD": graph.settings.neo4j_password.get_secret_value(),
            "M3GRAPH_DATA_DIR": str(tmp_path / "data"), "OMP_WAIT_POLICY": "PASSIVE"}

    def peak_mb(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
        proc = subprocess.run([TIME, "-f", "maxrss_kb=%M", *ENTRY, "cypher", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        kb = [line for line in proc.stderr.splitlines() if line.startswith("maxrss_kb=")][-1]
        return int(kb.split("=")[1]) / 1024, proc

    base, small = peak_mb("RETURN 1 AS one")
    wide, proc = peak_mb(WIDE, "--param", "s=" + "x" * 1000)
    assert small.returncode == 0 and proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and "before it was decoded" in proc.stderr
    assert wide - base < 40, f"{wide:.0f} MB against {base:.0f} MB for RETURN 1: the record was decoded"


TIME = "/usr/bin/time"
