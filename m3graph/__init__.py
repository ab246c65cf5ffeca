"""m3graph: long-term multimodal memory for agents, on Neo4j.

The library's front door is `Memory` (m3graph/client.py): `from m3graph import Memory`. It is loaded on first
use, so importing any part of m3graph (a worker, the CLI) does not load the service and its store.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from m3graph.client import Memory

try:
    __version__ = version("m3graph")
except PackageNotFoundError:  # a source tree on sys.path without an install: no metadata to read
    __version__ = "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "Memory":
        from m3graph.client import Memory

        return Memory
    raise AttributeError(f"module 'm3graph' has no attribute {name!r}")


__all__ = ["Memory", "__version__"]
