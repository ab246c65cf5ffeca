"""What one guarded query may BUILD inside an expression (`check_builds`), and the size of its inputs.

Why: the server's per-transaction memory cap tracks operators (aggregation, sort, eager buffers) but not the lists
and strings an expression builds, and its transaction timeout is checked between rows, never inside one expression,
so `RETURN size([x IN range(1, 1000000000) WHERE x % 7 = 0])` ran the server out of heap and `RETURN reduce(s = 0, i
IN range(1, 1000000000) | s + i)` ran for 52 s under a 10 s timeout. The shapes an expression may take are closed
like the operators are: every `range()` in an expression (the whole list of an UNWIND is an operator's) has literal
or parameter bounds spanning at most `RANGE_SPAN_MAX` values, no iteration (list comprehension, `reduce`,
`any`/`all`/`none`/`single`) runs inside another's body or walks a list the query collected itself, what an
iteration repeats per element is small, a `reduce` uses its accumulator once (no `s + s` doubling), `replace()`
never nests or grows an accumulator, and the query text and parameters have a size limit; the rest of a query's work
is done by operators, which the memory cap and the timeout do stop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RANGE_SPAN_MAX = 1_000  # values a range() inside an expression may produce (an UNWIND of a range is an operator)
LIST_PARAM_MAX = 10_000  # elements of a parameter list an iteration may walk
REDUCE_PARAM_MAX = 1_000  # elements of a parameter list a reduce may fold (string folds cost n^2)
BODY_VALUE_MAX = 1_024  # bytes of a parameter or string literal an iteration may repeat once per element
ITERATIONS_MAX = 16  # iterations (comprehensions, quantifiers, reduces) in one query
QUERY_CHARS_MAX = 20_000  # an analyst's question; it also bounds every literal a query can repeat
PARAMS_BYTES_MAX = 1_000_000  # the parameters as JSON

# A lexer for the query TEXT, used only to read the literal bounds of `range()` calls and the length of string
# literals: the plan renders literals as `$autoint_N`/`$autostring_N` and does not carry their values. The plan
# stays the judge: it may hold no more expression range() calls than the text shows, each with plain bounds.
_TOKEN = re.compile(r"""
    (?P<skip>\s+|//[^\n\r]*|/\*.*?\*/)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<name>`(?:[^`]|``)*`|[^\W\d]\w*)
  | (?P<param>\$(?:[^\W\d]\w*|\d+|`(?:[^`]|``)*`))
  | (?P<number>\d[\w.]*)
  | (?P<other>.)
""", re.S | re.X)
_ITERATION = re.compile(r"(?:\[\s*|(?<![\w.])(?:any|all|none|single)\(\s*)([A-Za-z_]\w*)\s+IN\s", re.I)
_REDUCE = re.compile(r"(?<![\w.])reduce\(\s*([A-Za-z_]\w*)\s*=", re.I)
_REPLACE = re.compile(r"(?<![\w.])replace\(", re.I)
_RANGE = re.compile(r"(?<![\w.$])range\(", re.I)
_PARAM = re.compile(r"\$([A-Za-z_]\w*)")
# What an iteration may walk: a range (bounded below), a parameter or literal list, a stored list property, a
# path's nodes or relationships, an entity's keys or labels. A list the query built (a collected variable) is
# refused: an expression over it runs where neither the timeout nor the memory cap lands, and it can copy a list
# the cap counted once into memory it does not count (`[x IN xs | x + $s]`); collect the projected value instead.
_SOURCE = re.compile(r"^(?:(?:range|nodes|relationships|keys|labels)\(|\[|\$"
                     r"|(?:cache\[)?[A-Za-z_]\w*\.[A-Za-z_]\w*\]?$)", re.I)


@dataclass(frozen=True)
class _Range:
    bounds: tuple[int, ...] | None  # None: a bound that is not a plain integer literal or integer parameter
    unwound: bool  # the whole list of an UNWIND: an operator pulls it lazily, row by row, under the timeout


@dataclass(frozen=True)
class _Iteration:
    kind: str  # "list", "quantifier" or "reduce"
    start: int
    source: str
    body: int  # where the part evaluated once per element begins
    end: int
    accumulator: str = ""


def check_inputs(query: str, params: Mapping[str, Any]) -> None:
    """The query text and its parameters within their sizes."""
    from m3graph.graphdb.guard_plan import PlanRefusal

    if len(query) > QUERY_CHARS_MAX:
        raise PlanRefusal("size", f"the query has {len(query)} characters, over {QUERY_CHARS_MAX}")
    size = len(json.dumps(params, default=str))
    if size > PARAMS_BYTES_MAX:
        raise PlanRefusal("size", f"the parameters are {size} bytes as JSON, over {PARAMS_BYTES_MAX}")


def _tokens(query: str) -> list[tuple[str, str]]:
    return [(m.lastgroup or "other", m.group()) for m in _TOKEN.finditer(query) if m.lastgroup != "skip"]


def _bound(tokens: list[tuple[str, str]], i: int, params: Mapping[str, Any]) -> tuple[int | None, int]:
    """The integer at tokens[i] (an optionally signed decimal literal or an integer parameter), and the next index."""
    sign = 1
    if i < len(tokens) and tokens[i][1] in "+-":
        sign, i = (-1 if tokens[i][1] == "-" else 1), i + 1
    if i >= len(tokens):
        return None, i
    kind, text = tokens[i]
    if kind == "number" and text.isdigit():
        return sign * int(text), i + 1
    if kind == "param":
        value = params.get(text[1:].strip("`"))
        if isinstance(value, int) and not isinstance(value, bool):
            return sign * value, i + 1
    return None, i + 1


def _keyword(token: tuple[str, str], word: str) -> bool:
    return token[0] == "name" and token[1].lower() == word


def text_ranges(query: str, params: Mapping[str, Any]) -> list[_Range]:
    """Each `range(...)` call of the query text with its integer bounds (None where one is not plain), and whether
    it is the whole list of an UNWIND (`UNWIND range(a, b) AS x`)."""
    tokens = _tokens(query)
    found = []
    for i, (kind, text) in enumerate(tokens):
        name = text.strip("`").replace("``", "`").lower() if kind == "name" else ""
        if name != "range" or i + 1 >= len(tokens) or tokens[i + 1][1] != "(":
            continue
        if i and tokens[i - 1][1] == ".":
            continue  # `x.range(`: a namespaced name, refused by the plan's function list
        bounds: list[int] | None = []
        j = i + 2
        while bounds is not None:
            value, j = _bound(tokens, j, params)
            if value is None or j >= len(tokens) or len(bounds) == 3:
                bounds = None
                break
            bounds.append(value)
            if tokens[j][1] == ")":
                break
            if tokens[j][1] != ",":
                bounds = None
            j += 1
        if bounds is not None and len(bounds) < 2:
            bounds = None
        end = _close_token(tokens, i + 1)
        unwound = i > 0 and _keyword(tokens[i - 1], "unwind") and end + 1 < len(tokens) and _keyword(
            tokens[end + 1], "as")
        found.append(_Range(tuple(bounds) if bounds is not None else None, unwound))
    return found


def _close_token(tokens: list[tuple[str, str]], start: int) -> int:
    depth = 0
    for i in range(start, len(tokens)):
        if tokens[i][1] in "([{":
            depth += 1
        elif tokens[i][1] in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return len(tokens)


def longest_literal(query: str) -> int:
    return max((len(t) - 2 for k, t in _tokens(query) if k == "string"), default=0)


def range_size(bounds: tuple[int, ...]) -> int:
    start, stop, step = (*bounds, 1)[:3]
    if step == 0:
        return 0  # the server refuses a zero step
    return max(0, (stop - start) // step + 1)


def _close(text: str, start: int) -> int:
    """Index of the bracket closing the one opened at or after `start` (len(text) if unbalanced)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def _top_level(text: str, start: int, end: int, marks: tuple[str, ...]) -> int:
    """First position in text[start:end] of one of `marks` outside any nested bracket (end if none)."""
    depth = 0
    for i in range(start, end):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0:
            for mark in marks:
                after = text[i + len(mark):i + len(mark) + 1]
                if text.startswith(mark, i) and (mark == "|" or not (text[i - 1:i].isalnum() or after.isalnum())):
                    return i
    return end


def _iterations(text: str) -> list[_Iteration]:
    """Every list comprehension, quantifier and reduce in one rendered expression, with its source and body."""
    found = []
    for m in _ITERATION.finditer(text):
        opener = m.start() if text[m.start()] == "[" else text.index("(", m.start())
        end = _close(text, opener)
        body = _top_level(text, m.end(), end, ("WHERE", "|"))
        kind = "list" if text[m.start()] == "[" else "quantifier"
        found.append(_Iteration(kind, m.start(), text[m.end():body].strip(), body, end))
    for m in _REDUCE.finditer(text):
        end = _close(text, m.start() + m.group(0).index("("))
        body = _top_level(text, m.end(), end, ("|",))
        head = text[m.end():body]
        source = head[head.find(" IN ") + 4:].strip() if " IN " in head else ""
        found.append(_Iteration("reduce", m.start(), source, body, end, m.group(1)))
    return found


def _unwound_range(node: dict[str, Any], text: str) -> int | None:
    """Where the range() that is an Unwind operator's whole list starts in `text` (None if there is none)."""
    from m3graph.graphdb.guard_plan import operator_name

    m = _RANGE.match(text.strip())
    if operator_name(node) != "Unwind" or m is None:
        return None
    start = len(text) - len(text.lstrip())
    end = _close(text, start + m.end() - 1)
    return start if text[end + 1:].lstrip().startswith("AS ") else None


def _check_source(loop: _Iteration, params: Mapping[str, Any]) -> None:
    from m3graph.graphdb.guard_plan import PlanRefusal

    if not _SOURCE.match(loop.source):
        raise PlanRefusal("bound", f"an iteration over {loop.source[:60]!r}: a list the query built itself is walked "
                                   "where the timeout and the memory cap do not reach; collect the value you need "
                                   "(collect(x.key)) or UNWIND the list")
    param = _PARAM.fullmatch(loop.source)
    if param and not param.group(1).lower().startswith("auto"):
        value = params.get(param.group(1))
        most = REDUCE_PARAM_MAX if loop.kind == "reduce" else LIST_PARAM_MAX
        if isinstance(value, list | str) and len(value) > most:
            raise PlanRefusal("bound", f"an iteration over ${param.group(1)}: {len(value)} elements, over {most}")


def _check_loops(text: str, params: Mapping[str, Any], literal_max: int) -> int:
    """Checks every iteration in one operator's expressions; returns how many there are."""
    from m3graph.graphdb.guard_plan import PlanRefusal

    loops = _iterations(text)
    starts = [x.start for x in loops] + [m.start() for m in _RANGE.finditer(text)]
    for loop in loops:
        _check_source(loop, params)
        body = text[loop.body:loop.end]
        if any(loop.body <= start < loop.end for start in starts):
            raise PlanRefusal("bound", "an iteration or range() inside another iteration's body (a list comprehension, "
                                       "reduce or any/all/none/single) multiplies their sizes; UNWIND the outer list")
        for name in _PARAM.findall(body):
            size = (literal_max if name.lower().startswith(("autostring", "autolist"))
                    else len(json.dumps(params.get(name), default=str)))
            if size > BODY_VALUE_MAX:
                raise PlanRefusal("bound", f"an iteration repeats a {size}-byte value once per element (at most "
                                           f"{BODY_VALUE_MAX} bytes there)")
        if loop.kind != "reduce":
            continue
        uses = len(re.findall(rf"(?<![\w.$]){re.escape(loop.accumulator)}(?!\w)", body))
        if uses > 1:
            raise PlanRefusal("bound", f"reduce uses its accumulator {loop.accumulator} {uses} times in one step; a "
                                       "value that doubles per element grows without bound")
        if uses and _REPLACE.search(body):
            raise PlanRefusal("bound", "replace() inside a reduce step can multiply the accumulator's size")
    for m in _REPLACE.finditer(text):
        if _REPLACE.search(text, m.end(), _close(text, m.end() - 1)):
            raise PlanRefusal("bound", "replace() inside replace() multiplies a string's size")
    return len(loops)


def check_builds(plan: Any, query: str, params: Mapping[str, Any]) -> None:
    """Raises `PlanRefusal` ("bound") unless every expression of `plan` builds a bounded value in bounded time."""
    from m3graph.graphdb.guard_plan import PlanRefusal, _details, _unquoted, operators

    in_expressions = iterations = 0
    literal_max = longest_literal(query)
    for node in operators(plan):
        text, _ = _unquoted(_details(node))
        unwound = _unwound_range(node, text)
        in_expressions += sum(1 for m in _RANGE.finditer(text) if m.start() != unwound)
        iterations += _check_loops(text, params, literal_max)
    if iterations > ITERATIONS_MAX:
        raise PlanRefusal("bound", f"{iterations} iterations in one query, over {ITERATIONS_MAX}")
    if not in_expressions:
        return
    ranges = [r for r in text_ranges(query, params) if not r.unwound]
    if len(ranges) < in_expressions or any(r.bounds is None for r in ranges):
        raise PlanRefusal("bound", "range() in an expression needs integer literal or integer parameter bounds (its "
                                   "size is checked before it runs); UNWIND a list you have instead")
    for r in ranges:
        assert r.bounds is not None
        if range_size(r.bounds) > RANGE_SPAN_MAX:
            raise PlanRefusal("bound", f"range({', '.join(map(str, r.bounds))}) has {range_size(r.bounds)} values, "
                                       f"over the {RANGE_SPAN_MAX} an expression may build (UNWIND streams a range)")
