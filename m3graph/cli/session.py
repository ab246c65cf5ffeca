"""What every `m3graph` command shares: the open store and the application service over it.

Why a module of its own: the commands in `m3graph/cli/*.py` used to import the private `_graph` and `_service`
of `m3graph.cli` (the package that imports them all). These are the public names; each command opens the store
with `open_graph`, builds its request, and calls `make_service(...)`'s operation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from m3graph.service import MemoryService
from m3graph.service.store import connect
from m3graph.settings import Settings

if TYPE_CHECKING:
    from m3graph.graphdb.store import MemoryGraph


def open_graph(settings: Settings) -> MemoryGraph:
    """The store over the configured server (a local one is started first when the settings ask for it)."""
    from m3graph.localserver.server import ensure_server

    ensure_server(settings)
    return connect(settings)


def make_service(settings: Settings, graph: MemoryGraph, embedder: Any = None) -> MemoryService:
    """The application service over an open graph, with the controller for `ask` and the text model loaded on
    first use (or `embedder`, already loaded)."""
    from m3graph.reasoning.control import controller_factory

    def embedder_factory() -> Any:
        from m3graph.embedding import text_embedder

        return embedder if embedder is not None else text_embedder(settings)

    return MemoryService(settings, graph, embedder_factory=embedder_factory,
                         controller_factory=controller_factory(settings, graph))


__all__ = ["make_service", "open_graph"]
