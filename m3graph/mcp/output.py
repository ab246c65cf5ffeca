"""Tool output as plain JSON values, never an embedding: `m3graph.service.output`, which every front end shares."""

from m3graph.service.output import one_line, plain

__all__ = ["one_line", "plain"]
