"""m3graph: long-term multimodal memory for agents, on Neo4j."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("m3graph")
except PackageNotFoundError:  # a source tree on sys.path without an install: no metadata to read
    __version__ = "0+unknown"

__all__ = ["__version__"]
