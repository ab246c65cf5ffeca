"""Every named Cypher file is valid on the real server and its header tells the truth."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from m3graph.cypher import QUERIES, VARIANTS_SUFFIX, CypherQuery
from m3graph.graphdb.store import MemoryGraph
from m3graph.schema.migrations import MIGRATIONS, _vector_params

PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
DDL = re.compile(r"^CREATE\s+(CONSTRAINT|(?:VECTOR\s+|FULLTEXT\s+)?INDEX)\s+(\w+)\s+IF\s+NOT\s+EXISTS\b", re.I)
DBMS_CALL = re.compile(r"^CALL\s+dbms\.components\(\)", re.I)
HEADER = re.compile(r"^//\s*(\w+)\s*:\s*(.*?)\s*$")
PACKAGE = Path(__file__).resolve().parents[2] / "m3graph"
# Query names as they appear in code: a quoted `folder/name` whose folder is a query folder.
LITERAL = re.compile(r"""["']([a-z_]+/[a-z0-9_]*[a-z0-9])["']""")  # "schema/vector_" is a prefix
# Calls with a name that is not a literal string: an f-string, or a variable (name tables are fine: the literal
# names sit in the table, and the test below finds them there).
F_NAME = re.compile(r"""\b(?:run|single|read|write|schema|query)\(\s*f["']""")
ROOTS = [PACKAGE / "cypher", PACKAGE / "devkit" / "cypher"]
REPO = PACKAGE.parent
# Queries of the development kit may be used only by benchmarks and tests.
DEV_FOLDERS = ("bench", "eval")

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


def _variant_names() -> set[str]:
    """The queries the templates yield: one per table of each `NAME.variants.toml`."""
    names: set[str] = set()
    for root in ROOTS:
        for table in root.rglob("*" + VARIANTS_SUFFIX):
            folder = table.parent.relative_to(root).as_posix()
            names |= {f"{folder}/{variant}" for variant in tomllib.loads(table.read_text(encoding="utf-8"))}
    return names


def _file_names() -> set[str]:
    return {f.relative_to(root).with_suffix("").as_posix() for root in ROOTS for f in root.rglob("*.cypher")}


def test_queries_were_loaded() -> None:
    files, variants = _file_names(), _variant_names()
    assert not files & variants
    assert set(QUERIES) == files | variants and len(QUERIES) > 50
    assert {"search/ranked", "search/ranked_2026", "identity/face_write", "identity/voice_write"} <= variants
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


def _literals(paths: list[Path]) -> dict[str, set[str]]:
    """Query-like literal names -> the files that spell them."""
    found: dict[str, set[str]] = {}
    for path in paths:
        for name in LITERAL.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return found


def _product_sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _dev_sources() -> list[Path]:
    return sorted([*REPO.joinpath("bench").rglob("*.py"), *REPO.joinpath("tests").rglob("*.py")])


def test_every_query_name_is_a_literal() -> None:
    """No query is called by a computed name: grep must find every caller of a .cypher file."""
    computed = [f"{p.relative_to(REPO)}:{i}" for p in _product_sources() for i, line in
                enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if F_NAME.search(line)]
    assert computed == [], f"query names built at run time: {computed}"


def test_every_query_is_referenced_by_its_literal_name() -> None:
    """Every .cypher file (and every template variant) has a caller that spells its name: product queries in
    m3graph/, the development kit's (bench/, eval/) in m3graph/, bench/ or tests/."""
    product = _literals(_product_sources())
    dev = _literals(_dev_sources())
    unused = sorted(name for name in QUERIES if name not in product
                    and not (name.split("/")[0] in DEV_FOLDERS and name in dev))
    assert unused == [], f"queries no code names literally: {unused}"


def test_every_literal_query_name_resolves() -> None:
    """A literal in a query folder's namespace that names no query is a typo waiting to fail at run time."""
    folders = {name.split("/")[0] for name in QUERIES}
    used = _literals(_product_sources()) | _literals(_dev_sources())
    missing = {name: sorted(files) for name, files in used.items()
               if name.split("/")[0] in folders and name not in QUERIES and not _is_path(name, files)}
    assert missing == {}, f"literal query names without a .cypher file: {missing}"


def _is_path(name: str, files: set[str]) -> bool:
    """`search/ranked.cypher`-style mentions in prose are caught by the pattern's end; what is left that names no
    query must be a file path (e.g. "schema/migrations" in a docstring) and is told apart by existing."""
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name).is_dir()
