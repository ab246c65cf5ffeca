"""The guard's first layer: an allow-list over the plan the SERVER reports for ``EXPLAIN <query>``.

Why the plan and not the text: substring checks were both too loose (``TERMINATE TRANSACTIONS`` and ``SHOW
SETTINGS`` plan as reads and passed) and too tight (a string that merely contained "load csv" was refused). The
server has already parsed, normalised and resolved the query, so every operator, every procedure and function it
will call, and every property key an expression reads are named in the plan. Everything is refused unless it is
on a list here (closed by default): an operator type this module does not know, a procedure or namespaced
function not listed, a dynamic property read, a whole-entity map (``properties(n)``, ``n{.*}``) or any vector key.

The plan's expressions are rendered by the server with literals auto-parameterised (``$autoint_0``), so the only
lexing done here is over that normalised rendering: strip string and backtick literals, then read names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from m3graph.graphdb.guard_vectors import VectorPolicy

# Operators an analyst's read needs (names as the server reports them, without the "@neo4j" suffix; the
# parenthesised variants such as "Expand(All)" are matched by their stem).
READ_OPERATORS = frozenset({
    # results and plumbing
    "ProduceResults", "EmptyResult", "Argument", "ArgumentTracker", "EmptyRow", "Eager", "CacheProperties",
    "Projection", "Filter", "NullifyMetadata", "ProjectEndpoints",
    # node and relationship scans / seeks
    "AllNodesScan", "NodeByLabelScan", "UnionNodeByLabelsScan", "IntersectionNodeByLabelsScan",
    "SubtractionNodeByLabelsScan", "NodeByIdSeek", "NodeByElementIdSeek", "NodeIndexSeek", "NodeUniqueIndexSeek",
    "NodeIndexScan", "NodeIndexContainsScan", "NodeIndexEndsWithScan", "NodeIndexSeekByRange",
    "NodeUniqueIndexSeekByRange", "MultiNodeIndexSeek", "AssertingMultiNodeIndexSeek",
    "DirectedRelationshipTypeScan", "UndirectedRelationshipTypeScan", "DirectedAllRelationshipsScan",
    "UndirectedAllRelationshipsScan", "DirectedUnionRelationshipTypesScan", "UndirectedUnionRelationshipTypesScan",
    "DirectedRelationshipByIdSeek", "UndirectedRelationshipByIdSeek", "DirectedRelationshipByElementIdSeek",
    "UndirectedRelationshipByElementIdSeek", "DirectedRelationshipIndexSeek", "UndirectedRelationshipIndexSeek",
    "DirectedRelationshipIndexScan", "UndirectedRelationshipIndexScan", "DirectedRelationshipIndexContainsScan",
    "UndirectedRelationshipIndexContainsScan", "DirectedRelationshipIndexEndsWithScan",
    "UndirectedRelationshipIndexEndsWithScan", "DirectedRelationshipIndexSeekByRange",
    "UndirectedRelationshipIndexSeekByRange", "DirectedRelationshipUniqueIndexSeek",
    "UndirectedRelationshipUniqueIndexSeek", "DirectedRelationshipUniqueIndexSeekByRange",
    "UndirectedRelationshipUniqueIndexSeekByRange", "NodeCountFromCountStore", "RelationshipCountFromCountStore",
    # expands and path finding
    "Expand", "OptionalExpand", "VarLengthExpand", "BFSPruningVarExpand", "ShortestPath", "StatefulShortestPath",
    "Trail", "Repeat", "TriadicSelection", "TriadicBuild", "TriadicFilter",
    # aggregation, ordering, paging, unwind
    "Aggregation", "EagerAggregation", "OrderedAggregation", "Distinct", "OrderedDistinct", "Sort", "PartialSort",
    "Top", "Top1WithTies", "PartialTop", "Limit", "ExhaustiveLimit", "Skip", "Unwind",
    # apply / subquery / optional / union / joins
    "Apply", "SemiApply", "AntiSemiApply", "LetSemiApply", "LetAntiSemiApply", "SelectOrSemiApply",
    "SelectOrAntiSemiApply", "LetSelectOrSemiApply", "LetSelectOrAntiSemiApply", "RollUpApply",
    "ConditionalApply", "AntiConditionalApply", "Optional", "Anti", "Union", "OrderedUnion", "CartesianProduct",
    "NodeHashJoin", "ValueHashJoin", "NodeLeftOuterHashJoin", "NodeRightOuterHashJoin",
    # schema listings and procedure calls (the procedure itself is checked below)
    "ShowIndexes", "ShowConstraints", "ShowProcedures", "ShowFunctions", "ProcedureCall",
})
# Procedures an analyst's read may call, by the name the plan resolves (lower case).
READ_PROCEDURES = frozenset(name.lower() for name in (
    "db.labels", "db.relationshipTypes", "db.propertyKeys", "db.schema.visualization",
    "db.schema.nodeTypeProperties", "db.schema.relTypeProperties", "db.index.fulltext.queryNodes",
    "db.index.fulltext.queryRelationships", "dbms.components",
))
# Not `db.index.vector.*` nor `vector.similarity.*`: a procedure or function that scores a caller's vector against
# stored ones is an oracle (basis-vector probes read every stored vector back, one coordinate per call).
# Namespaced built-in functions that compute on values (never on the database or the filesystem).
FUNCTION_NAMESPACES = ("point.", "date.", "datetime.", "localdatetime.", "localtime.", "time.", "duration.")
# Un-namespaced built-in functions (SHOW FUNCTIONS on 2026.09 and 5.26, lower case), less `properties`, which
# turns a whole node into a map of all its keys (vectors included). Anything else named like a call in the plan's
# rendering (an internal form such as `PropertiesUsingCachedProperties(...)`, a user function) is refused.
_BUILTINS = """
abs acos all allshortestpaths any asin atan atan2 avg btrim ceil char_length character_length coalesce collect
cos cot count date datetime degrees duration e elementid endnode exists exp file floor haversin head id isempty
isnan keys labels last left length linenumber localdatetime localtime log log10 lower ltrim max min nodes none
normalize nullif percentilecont percentiledisc pi point radians rand randomuuid range reduce relationships
replace reverse right round rtrim shortestpath sign sin single size split sqrt stdev stdevp startnode substring
sum tail tan time timestamp toboolean tobooleanlist tobooleanornull tofloat tofloatlist tofloatornull tointeger
tointegerlist tointegerornull tolower tostring tostringlist tostringornull toupper trim type upper valuetype
"""
BUILTIN_FUNCTIONS = frozenset(_BUILTINS.split())
# Functions the planner itself writes for pattern predicates: `WHERE NOT (o)-[:OF]->()`, `EXISTS {(o)-[:OF]->()}`
# and `COUNT {(o)--()}` become `getDegree((o)-[:OF]->())`, a relationship count that reads no property.
PLANNER_FUNCTIONS = frozenset({"getdegree"})

_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.S)
_BACKTICK = re.compile(r"`(?:[^`]|``)*`")
# The server renders a call with no space before "(": `toUpper(m.text)`, `db.labels()`; `WHERE (` is not one.
_CALL = re.compile(r"(?<![:\w.$])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\(")
_WORD = re.compile(r"[A-Za-z_]\w*")
_ALL_PROPS = re.compile(r"\{\s*\.\s*\*")
# A subscript the server renders for a list index or slice of literals: `$autoint_0`, `1`, `$autoint_0..$autoint_1`.
_INT = r"\s*(?:-?\d+|\$autoint_\d+)?\s*"
_LIST_SUBSCRIPT = re.compile(rf"^{_INT}(?:\.\.{_INT})?$")


class PlanRefusal(Exception):
    """Why the plan was refused: `reason` is one short word, `detail` names what the server reported."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def operators(plan: Any) -> Iterator[dict[str, Any]]:
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.get("children") or [])


def operator_name(node: dict[str, Any]) -> str:
    """`Expand(All)@neo4j` -> `Expand`."""
    return str(node.get("operatorType", "")).split("@")[0].split("(")[0].strip()


def _details(node: dict[str, Any]) -> str:
    args = node.get("args") or {}
    return " ".join(str(args[k]) for k in ("Details", "details") if k in args)


def _unquoted(text: str) -> tuple[str, list[str]]:
    """The text with string literals blanked and backtick names replaced by `_q`; the backtick names apart."""
    text = _STRING.sub("''", text)
    quoted = [m.group(0)[1:-1].replace("``", "`") for m in _BACKTICK.finditer(text)]
    return _BACKTICK.sub("_q", text), quoted


def _subscripts(text: str) -> Iterator[str]:
    """The contents of every `x[...]` subscript (an index, slice or dynamic property read) in rendered text."""
    depth_start: list[int] = []
    for i, ch in enumerate(text):
        if ch == "[":
            before = text[:i].rstrip()
            is_subscript = bool(before) and (before[-1].isalnum() or before[-1] in "_)]}$")
            cached = re.search(r"(?<![\w.])cache$", before) is not None  # `cache[n.key]`: a cached property read
            depth_start.append(i if is_subscript and not cached else -1)
        elif ch == "]" and depth_start:
            start = depth_start.pop()
            if start >= 0:
                yield text[start + 1: i]


def check_plan(plan: Any, policy: VectorPolicy) -> None:
    """Raises `PlanRefusal` unless every operator, call, subscript and property key of `plan` is allowed."""
    if not plan:
        raise PlanRefusal("plan", "the server reported no plan")
    for node in operators(plan):
        op = operator_name(node)
        if op not in READ_OPERATORS:
            raise PlanRefusal("operator", f"{op or '?'} is not an operator a read-only query may use")
        raw = _details(node)
        if raw.endswith(("...", "…")):
            raise PlanRefusal("plan", f"the server shortened the details of {op}; the query is too long to check")
        text, quoted = _unquoted(raw)
        # The SHOW listings render their options as calls (`proceduresForUser(all)`), never an expression.
        calls = [] if op.startswith("Show") else [m.group(1) for m in _CALL.finditer(text)]
        if op == "ProcedureCall":
            name = calls[0] if calls else ""
            if name.lower() not in READ_PROCEDURES:
                raise PlanRefusal("procedure", f"procedure {name or '?'} is not allowed in read_cypher")
        for name in calls:
            _check_call(name, node, text)
        for sub in _subscripts(text):
            if not _LIST_SUBSCRIPT.match(sub):
                raise PlanRefusal("dynamic", f"dynamic property or index access [{sub.strip()}] is not allowed")
        if _ALL_PROPS.search(text):
            raise PlanRefusal("vector", "a map of all properties ({.*}) may hold vectors; name the keys instead")
        for word in (*_WORD.findall(text), *quoted):
            if word.lower() not in policy.index_names and policy.is_vector_key(word):
                raise PlanRefusal("vector", f"{word!r} names a vector property; vectors never leave read_cypher")


def calls_procedures(plan: Any) -> bool:
    return any(operator_name(n) == "ProcedureCall" for n in operators(plan))


def dbms_listing(plan: Any) -> bool:
    """True for a plan whose only procedure is `dbms.components`: the server types it `s` (a DBMS-mode procedure),
    which the query-type check alone would refuse although it only lists versions."""
    calls = [_details(n).split("(")[0].strip().lower() for n in operators(plan) if operator_name(n) == "ProcedureCall"]
    return bool(calls) and all(c == "dbms.components" for c in calls)


def _check_call(name: str, node: dict[str, Any], text: str) -> None:
    low = name.lower()
    if low.startswith("properties"):
        raise PlanRefusal("vector", f"{name}() returns every property, vectors included; name the keys instead")
    if "." not in low:
        if low in BUILTIN_FUNCTIONS or low in PLANNER_FUNCTIONS:
            return
        raise PlanRefusal("function", f"{name}() is not a function read_cypher allows")
    if low in READ_PROCEDURES and operator_name(node) == "ProcedureCall":
        return
    if low.startswith(FUNCTION_NAMESPACES):
        return
    raise PlanRefusal("procedure", f"{name} is not allowed in read_cypher")
