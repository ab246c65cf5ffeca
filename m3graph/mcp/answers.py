"""What a tool sends back: compact JSON, one list cut to a page, and a response budget an agent can rely on.

Why: an agent pays for every character of a result in its context, and a pretty-printed 20k-character answer
crowds out the conversation it serves. So every tool result is compact JSON (no indentation, no spaces after
separators; the same value as structured content and as text), and a tool that returns a list (search hits, a
person's episodes, a source's clips, history slots, rows) sends one page of it: at most `limit` items from
`cursor`, and never more than `budget` characters in all. A page that leaves items out says so in the result
itself (`page.truncated`: "… call again with cursor='20'"), so a model that reads only the text still knows.

Cursors are offsets into the full list, as a string (`"20"`); the list is recomputed on the next call (the same
arguments give the same order: searches and reads are deterministic over an unchanged graph).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from m3graph.errors import InvalidInputError
from m3graph.service.results import Result
from m3graph.service.tool_results import Page

BUDGET = 8000  # characters of one result's JSON by default (about 2,000 tokens)
MAX_LIMIT = 200

Limit = Annotated[int | None, Field(ge=1, le=MAX_LIMIT, description=(
    "At most this many items of the list (default: as many as fit the response budget, about 8,000 "
    "characters)."))]
Cursor = Annotated[str | None, Field(max_length=20, pattern="^[0-9]+$", description=(
    "Continue a list: the next_cursor a previous call returned (with the same other arguments)."))]


class _PageArguments(BaseModel):
    limit: Limit = None
    cursor: Cursor = None


# The paging arguments' JSON schemas (what every list tool's `limit` and `cursor` must be; the front-end test checks).
PAGE_ARGUMENTS: dict[str, Any] = _PageArguments.model_json_schema()["properties"]


def compact(value: Any) -> str:
    """JSON with no indentation and no spaces after separators; non-ASCII kept as is (names, accents)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def send(value: Result | dict[str, Any]) -> CallToolResult:
    """A tool result: the value as structured content and, identical, as compact JSON text."""
    data = value.to_json() if isinstance(value, Result) else value
    return CallToolResult(content=[TextContent(type="text", text=compact(data))], structured_content=data)


def offset_of(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise InvalidInputError(f"cursor {cursor!r:.40} is not one this server returned")
    return int(cursor)


def paged(value: Result | dict[str, Any], items: str, limit: int | None = None, cursor: str | None = None,
          budget: int = BUDGET, noun: str | None = None) -> dict[str, Any]:
    """The value's JSON with its list `items` cut to one page: from `cursor`, at most `limit` items, and as many
    as keep the whole under `budget` characters (at least one, so a page always moves on). A page that leaves
    items out (before or after it) carries `page` (`tool_results.Page`)."""
    data = value.to_json() if isinstance(value, Result) else dict(value)
    full = data.get(items) or []
    start = offset_of(cursor)
    if start > len(full):
        raise InvalidInputError(f"cursor {start} is past the end of {items} ({len(full)} in all)")
    window = full[start:start + limit] if limit is not None else full[start:]
    room = budget - len(compact({**data, items: []})) - 200  # the page's own fields
    taken, used = 0, 0
    for item in window:
        used += len(compact(item)) + 1
        if taken and used > room:
            break
        taken += 1
    page = window[:taken]
    out = {**data, items: page}
    end = start + taken
    if start or end < len(full):
        rest = len(full) - end
        why = f"limit {limit}" if limit is not None and taken == limit else f"the {budget}-character response budget"
        more = (f"{rest} more {noun or items} left out ({why}): call again with cursor='{end}'" if rest else None)
        out["page"] = Page(items=items, offset=start, returned=taken, total=len(full),
                           next_cursor=str(end) if rest else None, truncated=more).to_json()
    return out


__all__ = ["BUDGET", "PAGE_ARGUMENTS", "Cursor", "Limit", "compact", "offset_of", "paged", "send"]
