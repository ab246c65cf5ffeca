"""Operation results as plain JSON values, and never an embedding.

Why: an agent's context is small and costly, and a 384-float vector in it is noise at best (the Graphiti MCP
server learnt this the hard way). Every service result passes through `plain()`, which turns graph and time
values into JSON and replaces any list of more than 32 floats with a placeholder, the same rule the guarded
Cypher tool applies to its rows.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

import neo4j
from pydantic import BaseModel

from m3graph.graphdb.guarded import FLOAT_LIST_MAX


def plain(value: Any) -> Any:
    """JSON-safe copy of `value`: dicts, lists, strings, numbers, booleans and None only."""
    if isinstance(value, BaseModel):  # a service result under its JSON keys (`results.Result` aliases)
        return plain(value.model_dump(by_alias=True))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, neo4j.graph.Node):
        return {"labels": sorted(value.labels), **{k: plain(v) for k, v in value.items()}}
    if isinstance(value, neo4j.graph.Relationship):
        return {"type": value.type, **{k: plain(v) for k, v in value.items()}}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = list(value)
        if len(items) > FLOAT_LIST_MAX and all(isinstance(x, float) for x in items):
            return f"<{len(items)} floats omitted>"
        return [plain(x) for x in items]
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    iso = getattr(value, "iso_format", None)  # neo4j.time values
    if callable(iso):
        return iso()
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return plain(value.tolist())
    return str(value)


def one_line(text: str, limit: int = 400) -> str:
    """The first line of a message, cut to `limit` characters: what an error result carries."""
    first = next((line.strip() for line in str(text).splitlines() if line.strip()), "")
    return first if len(first) <= limit else first[: limit - 1] + "…"
