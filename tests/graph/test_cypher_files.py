"""Every named Cypher file is valid on the real server and its header tells the truth."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from m3graph.cypher import QUERIES, CypherQuery
from m3graph.graphdb.store import MemoryGraph
from m3graph.schema.migrations import MIGRATIONS, _vector_params

PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
DDL = re.compile(r"^CREATE\s+(CONSTRAINT|(?:VECTOR\s+|FULLTEXT\s+)?INDEX)\s+(\w+)\s+IF\s+NOT\s+EXISTS\b", re.I)
DBMS_CALL = re.compile(r"^CALL\s+dbms\.components\(\)", re.I)
HEADER = re.compile(r"^//\s*(\w+)\s*:\s*(.*?)\s*$")
PACKAGE = Path(__file__).resolve().parents[2] / "m3graph"
# Query names used from Python: literal names, and f-strings over the entity kind.
USE = re.compile(r"""\b(?:run|single|read|write|schema)\(\s*(f?)"([a-z_]+/[a-z_{}]+)\"""")

NON_SCHEMA = sorted(n for n, q in QUERIES.items() if q.mode != "schema")
SCHEMA = sorted(n for n, q in QUERIES.items() if q.mode == "schema")


def _body(q: CypherQuery) -> str:
    """The query without `//` comment lines (headers and explanations)."""
    return "\n".join(line for line in q.text.splitlines() if not line.lstrip().startswith("//"))


def _header(q: CypherQuery, key: str) -> list[str] | None:
    for line in q.text.splitlines():
        if not line.startswith("//"):
            break
        m = HEADER.match(line)
        if m and m.group(1).lower() == key:
            return [p.strip() for p in m.group(2).split(",") if p.strip()]
    return None


def test_queries_were_loaded() -> None:
    files = sorted(PACKAGE.joinpath("cypher").rglob("*.cypher"))
    assert len(files) == len(QUERIES) > 50
    assert SCHEMA and NON_SCHEMA


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_declared_params_match_text(name: str) -> None:
    q = QUERIES[name]
    used = set(PARAM.findall(_body(q)))
    assert set(q.params) == used, f"{name}: header declares {sorted(q.params)}, text uses {sorted(used)}"
    assert len(set(q.params)) == len(q.params), f"{name}: a parameter is declared twice"


@pytest.mark.parametrize("name", NON_SCHEMA)
def test_explain_matches_declared_mode(memory_graph: MemoryGraph, name: str) -> None:
    q = QUERIES[name]
    with memory_graph.ex.session() as session:
        result = session.run("EXPLAIN " + q.text)
        keys = result.keys()
        summary = result.consume()
    assert summary.plan is not None
    if q.mode == "read":
        # A DBMS procedure (dbms.components) is planned as 's' although it only reads; nothing else may be.
        allowed = ("r", "s") if DBMS_CALL.match(_body(q).strip()) else ("r",)
        assert summary.query_type in allowed, f"{name} is declared read but the planner says {summary.query_type}"
    else:
        assert summary.query_type in ("w", "rw"), f"{name} is declared write but is {summary.query_type}"
    returns = _header(q, "returns")
    if returns is not None:
        assert list(keys) == returns, f"{name}: header returns {returns}, query returns {list(keys)}"
    else:
        assert list(keys) == [], f"{name} returns {list(keys)} without a '// returns:' header"


@pytest.mark.parametrize("name", SCHEMA)
def test_schema_files_created_what_they_declare(memory_graph: MemoryGraph, name: str) -> None:
    """DDL cannot be EXPLAINed: each file's index or constraint must exist, created by the migrations."""
    q = QUERIES[name]
    body = re.sub(r"^CYPHER\s+\d+\s+", "", _body(q).strip())  # a language selector (CYPHER 25) is no statement
    needs = {st: m.requires for m in MIGRATIONS for st in m.statements if m.requires}
    if name in needs and not getattr(memory_graph.ex.capabilities, needs[name]):
        pytest.skip(f"{name} belongs to a migration that needs the server capability {needs[name]}")
    if body.upper().startswith("DROP INDEX "):
        assert re.fullmatch(r"DROP INDEX \w+ IF EXISTS", body), f"{name}: a DROP must be DROP INDEX x IF EXISTS"
        return  # dropping is what re-creations (re-embedding, migration 8) start with; run only by them
    if body.upper().startswith("MATCH "):  # a data backfill of a migration: idempotent, so it must run again
        assert body.rstrip().endswith("IN TRANSACTIONS OF 500 ROWS"), f"{name}: a backfill runs in batches"
        memory_graph.ex.schema(name)
        return
    if body.upper().startswith("CALL "):
        assert body.startswith("CALL db.awaitIndexes(")
        memory_graph.ex.schema(name, timeout_s=30)
        return
    m = DDL.match(body)
    assert m, f"{name} is declared schema but is not a CREATE ... IF NOT EXISTS statement"
    kind, object_name = m.group(1).upper(), m.group(2)
    if kind == "CONSTRAINT":
        names = {r["name"] for r in memory_graph.ex.read("schema/list_constraints")}
    else:
        names = {r["name"] for r in memory_graph.ex.read("schema/list_indexes")}
    assert object_name in names, f"{name} declares {object_name}, which the migrations did not create"
    # Running it again is harmless (IF NOT EXISTS), which is what makes migrations re-runnable.
    memory_graph.ex.schema(name, **(_vector_params(memory_graph.settings, name) if q.params else {}))


def test_every_query_used_in_code_exists() -> None:
    used: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for is_f, name in USE.findall(path.read_text(encoding="utf-8")):
            if is_f and "{kind}" in name:
                used |= {name.replace("{kind}", k) for k in ("face", "voice")}
            elif "{" not in name:
                used.add(name)
    assert used, "no query names found: the pattern is out of date"
    missing = sorted(used - set(QUERIES))
    assert missing == []
