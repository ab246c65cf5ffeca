"""Typed results of the agent-only operations (the graph's schema, a note, a conversation file), and the page a
list result is cut to.

Why beside `results` and not in it: these are the MCP front end's own operations (`m3graph.mcp.service`), and
`Page` is what any front end with a response budget attaches to a list result; `results` holds what every front
end shows. The JSON rules are `results.Result`'s (`omit_none`, aliases, `to_json()` plain and vector-free).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from m3graph.service.results import AskResult, Result

# ------------------------------------------------------------------------------------------------ paging


class Page(Result):
    """Which part of a list a result holds: `items` names the list, `offset` where this page starts, `returned`
    how many it holds of `total`; `next_cursor` continues it and `truncated` says so in words (both absent on the
    last page). A result carries a page only when something of the list was left out."""

    omit_none: ClassVar[frozenset[str]] = frozenset({"next_cursor", "truncated"})
    items: str
    offset: int
    returned: int
    total: int
    next_cursor: str | None = None
    truncated: str | None = None


# ------------------------------------------------------------------------------------------------ graph_schema


class SchemaNode(Result):
    label: str
    key: str
    properties: list[str]
    description: str


class SchemaRelationship(Result):
    from_label: str = Field(serialization_alias="from")
    type: str
    to: str
    properties: list[str]
    description: str


class SchemaIndex(Result):
    """An index the server reports: its name, type (RANGE, TEXT, FULLTEXT, VECTOR, ...) and what it covers,
    "Label(property, ...)"; `state` only while it is not ONLINE."""

    omit_none: ClassVar[frozenset[str]] = frozenset({"state"})
    name: str
    type: str | None = None
    on: str
    state: str | None = None


class SchemaConstraint(Result):
    name: str
    on: str


class SchemaMigrations(Result):
    applied: list[int]
    latest: int
    pending: list[str]  # "version: description" of each known migration not yet applied


class GraphSchema(Result):
    """The graph's model (labels with their key, properties and meaning; relationship types with endpoints; how
    tags work; the vector indexes), then what the server reports: indexes (those that only back a constraint, and
    the token lookups, left out), constraints, migrations, counts."""

    nodes: list[SchemaNode]
    relationships: list[SchemaRelationship]
    tags: str
    vector_indexes: dict[str, str]
    indexes: list[SchemaIndex]
    constraints: list[SchemaConstraint]
    migrations: SchemaMigrations
    counts: dict[str, int]


# ------------------------------------------------------------------------------------------------ ask jobs


class AskStatus(Result):
    """An `ask` still being answered, or its job polled: the job id to poll with ask_status, its state (running,
    done, failed), the question, seconds so far; `answer` is the whole result once done, `next` what to call."""

    omit_none: ClassVar[frozenset[str]] = frozenset({"answer", "error", "next"})
    job_id: str
    state: str
    question: str
    elapsed_s: float
    answer: AskResult | None = None
    error: str | None = None
    next: str | None = None


# ------------------------------------------------------------------------------------------------ writes


class ChatIngested(Result):
    """What ingesting a conversation wrote: the source, the sessions (clip indexes) written by this call, those
    already stored (skipped), and the counts; `files_refused` one line per shared file that was not read."""

    source_id: str
    sessions_written: list[int]
    sessions_skipped: int
    turns: int
    episodic: int
    semantic: int
    speakers_created: int
    files: int
    files_refused: list[str]


class Remembered(Result):
    """An agent's note as stored: its text, the notes source, the clip index and clip key ("source#N") it became,
    the turn id and the speaker it was filed under, and the ingestion's summary."""

    remembered: str
    source: str
    speaker: str
    agent_note: bool = True
    clip: int | None
    clip_key: str | None
    turn_id: str
    summary: ChatIngested


__all__ = ["AskStatus", "ChatIngested", "GraphSchema", "Page", "Remembered", "SchemaConstraint", "SchemaIndex",
           "SchemaMigrations", "SchemaNode", "SchemaRelationship"]
