"""Opening the store and looking after it, for the front ends that start one: the CLI's commands, the MCP server
and the explorer.

Why here: a front end used to import the store's classes (`MemoryGraph`, `Executor`) to open a connection, apply
migrations or move vectors to a new model, so it could as well run queries of its own. Now it calls these
functions and hands the open store to `MemoryService` (or to an ingestion entry point); the store's classes stay
under the application layer (tests/unit/test_layers.py). Starting a local Neo4j is the front end's own step
(`m3graph.localserver`), done before these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from m3graph.graphdb.executor import Executor
from m3graph.graphdb.reembed import ReembedSummary
from m3graph.graphdb.reembed import reembed as run_reembed
from m3graph.graphdb.store import MemoryGraph
from m3graph.schema.migrations import apply_migrations
from m3graph.settings import Settings


def connect(settings: Settings) -> MemoryGraph:
    """The store over the configured server, its schema migrated (a context manager: `with connect(s) as g`)."""
    return MemoryGraph.connect(settings)


def migrate(settings: Settings) -> list[int]:
    """Applies the missing schema migrations; returns the versions that ran."""
    with Executor.connect(settings) as ex:
        return apply_migrations(ex, settings)


def reembed(settings: Settings, kind: Literal["text", "face", "voice"], embedder: Any, *, batch_size: int,
            progress: Callable[[int, int], None] | None = None,
            missing: Literal["refuse", "drop"] = "refuse") -> ReembedSummary:
    """Every memory (or face / voice entity) re-embedded by `embedder`, its vector index re-created at the new
    dimension, then the migrations applied (connecting without them first: the old index's dimension would be
    refused)."""
    with Executor.connect(settings) as ex:
        summary = run_reembed(ex, settings, kind, embedder, batch_size=batch_size, progress=progress,
                              missing=missing)
        apply_migrations(ex, settings)
    return summary


__all__ = ["MemoryGraph", "ReembedSummary", "connect", "migrate", "reembed"]
