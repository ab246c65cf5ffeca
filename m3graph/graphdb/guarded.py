"""Guarded read-only Cypher for agents: arbitrary query text, defence in depth, the graph never changes.

Layers, each enough on its own for some attacks and each tested on its own:
1. ``EXPLAIN`` first: the server's query type must be ``r`` (read only); every procedure and function the plan
   or the text names must be allowed (file/network/eval/trigger/admin procedures are denied; LOAD CSV too).
2. The query runs in a READ transaction (``execute_read``), so the server itself refuses a write that slipped
   through the first layer.
3. A server-side transaction timeout, a row cap and an output size cap; lists of more than 32 floats
   (embeddings) are replaced by a placeholder. Values come only through parameters.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import neo4j
from neo4j.exceptions import ClientError, CypherSyntaxError, Neo4jError

from m3graph.errors import M3GraphError

FLOAT_LIST_MAX = 32
DENIED_PREFIXES = ("apoc.load.", "apoc.import.", "apoc.export.", "apoc.cypher.", "apoc.periodic.", "apoc.trigger.",
                   "apoc.systemdb.", "apoc.do.", "apoc.create.", "apoc.merge.", "apoc.refactor.", "apoc.atomic.",
                   "apoc.lock.", "apoc.log.", "apoc.util.sleep", "apoc.schema.assert", "db.create", "dbms.")
ALLOWED_DENIED = ("dbms.components", "dbms.procedures", "dbms.functions")  # read-only listings
CALLED = re.compile(r"(`?[A-Za-z_]\w*`?(?:\s*\.\s*`?[A-Za-z_]\w*`?)+)\s*\(")
LOAD_CSV = re.compile(r"\bLOAD\s+CSV\b", re.I)


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


def _scrub(value: Any) -> Any:
    """Plain JSON values only; a long float list (an embedding) becomes a placeholder."""
    if isinstance(value, neo4j.graph.Node):
        return {"labels": sorted(value.labels), **{k: _scrub(v) for k, v in value.items()}}
    if isinstance(value, neo4j.graph.Relationship):
        return {"type": value.type, **{k: _scrub(v) for k, v in value.items()}}
    if isinstance(value, neo4j.graph.Path):
        return {"nodes": [_scrub(n) for n in value.nodes], "relationships": [_scrub(r) for r in value.relationships]}
    if isinstance(value, list | tuple):
        if len(value) > FLOAT_LIST_MAX and all(isinstance(x, float) for x in value):
            return f"<{len(value)} floats omitted>"
        return [_scrub(x) for x in value]
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _names_in(plan: Any) -> set[str]:
    out: set[str] = set()
    stack = [plan]
    while stack:
        p = stack.pop()
        if not p:
            continue
        args = p.get("args", {}) if isinstance(p, dict) else {}
        if isinstance(p, dict) and p.get("operatorType", "").split("@")[0] == "LoadCSV":
            out.add("LOAD CSV")
        for v in args.values():
            out.update(re.sub(r"\s+", "", m) for m in CALLED.findall(str(v)))
        stack.extend(p.get("children", []) if isinstance(p, dict) else [])
    return out


def _denied(name: str) -> bool:
    low = name.lower().replace("`", "")
    if low == "load csv":
        return True
    if any(low.startswith(a) for a in ALLOWED_DENIED):
        return False
    return any(low.startswith(d) for d in DENIED_PREFIXES)


def check_names(query: str, plan: Any) -> None:
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", query, flags=re.S)
    names = _names_in(plan) | {re.sub(r"\s+", "", m) for m in CALLED.findall(text)}
    if LOAD_CSV.search(text):
        names.add("LOAD CSV")
    bad = sorted(n for n in names if _denied(n))
    if bad:
        raise GuardedCypherError("procedure", f"{', '.join(bad)} is not allowed in read_cypher")


def run_guarded(driver: neo4j.Driver, database: str, query: str, params: dict[str, Any] | None = None, *,
                timeout_s: float = 10.0, max_rows: int = 1000, max_bytes: int = 1_000_000) -> GuardedResult:
    params = dict(params or {})
    if not query.strip():
        raise GuardedCypherError("empty", "no query given")
    check_names(query, None)  # before EXPLAIN too: a denied name is refused even where it does not exist
    try:
        with driver.session(database=database, default_access_mode=neo4j.READ_ACCESS) as session:
            summary = session.execute_read(lambda tx: tx.run("EXPLAIN " + query, params).consume())
            if summary.query_type != "r":
                raise GuardedCypherError("write", f"query type {summary.query_type!r}: only read queries run here")
            check_names(query, summary.plan)

            @neo4j.unit_of_work(timeout=timeout_s)
            def work(tx: neo4j.ManagedTransaction) -> GuardedResult:
                result = tx.run(query, params)
                rows: list[dict[str, Any]] = []
                truncated = False
                for record in result:
                    if len(rows) >= max_rows:
                        truncated = True
                        break
                    rows.append({k: _scrub(v) for k, v in record.items()})
                return GuardedResult(list(result.keys()), rows, truncated)

            out = session.execute_read(work)
    except GuardedCypherError:
        raise
    except CypherSyntaxError as exc:
        raise GuardedCypherError("syntax", (exc.message or str(exc)).splitlines()[0]) from None
    except ClientError as exc:
        code = exc.code or ""
        if "TimedOut" in code or "Terminated" in code:
            raise GuardedCypherError("timeout", f"stopped after {timeout_s:g} s") from None
        if "AccessMode" in code or "Forbidden" in code:
            raise GuardedCypherError("write", "the server refused a write in a read transaction") from None
        first = (exc.message or "").splitlines()[0] if exc.message else ""
        raise GuardedCypherError("refused", f"{code}: {first}") from None
    except Neo4jError as exc:
        raise GuardedCypherError("refused", f"{exc.code}") from None
    if out.truncated:
        out.notes.append(f"truncated at {max_rows} rows")
    while out.rows and len(json.dumps(out.rows, default=str)) > max_bytes:
        out.rows = out.rows[: len(out.rows) // 2]
        out.truncated = True
        out.notes.append(f"output above {max_bytes} bytes: rows halved")
    return out
