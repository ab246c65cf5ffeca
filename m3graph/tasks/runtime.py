"""Per-process resources of a worker: settings, Neo4j driver, Redis client and memorizer, opened lazily.

One of each per process (the driver requires it; a memorizer may hold a loaded model); prefork children
open their own after the fork. Settings come from `m3graph.tasks.app.configured_settings`, never from text.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from celery.signals import worker_process_shutdown

from m3graph.settings import Settings
from m3graph.tasks.app import configured_settings

if TYPE_CHECKING:
    import redis

    from m3graph.embedding import TextEmbedder
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.ingest.pipeline import Memorizer

_local = threading.local()


def settings() -> Settings:
    cached = getattr(_local, "settings", None)
    if cached is None:
        cached = configured_settings()
        _local.settings = cached
    return cached


def graph() -> MemoryGraph:
    from m3graph.graphdb.store import MemoryGraph

    g = getattr(_local, "graph", None)
    if g is None:
        g = MemoryGraph.connect(settings())
        _local.graph = g
    return g


def redis_client(s: Settings) -> redis.Redis:
    import redis

    return redis.Redis.from_url(s.tasks.redis_url, socket_timeout=30, health_check_interval=30)


def redis_conn() -> redis.Redis:
    client = getattr(_local, "redis", None)
    if client is None:
        client = redis_client(settings())
        _local.redis = client
    return client


def memorizer() -> Memorizer:
    """One memorizer per process: an LLM memorizer holds a loaded model."""
    from m3graph.reasoning.memorize import make_memorizer

    m = getattr(_local, "memorizer", None)
    if m is None:
        m = make_memorizer(settings())
        _local.memorizer = m
    return m


def embedder() -> TextEmbedder:
    from m3graph.embedding import text_embedder

    return text_embedder(settings())


@worker_process_shutdown.connect
def _close_graph(**_: Any) -> None:
    g = getattr(_local, "graph", None)
    if g is not None:
        g.close()
