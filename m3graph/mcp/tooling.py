"""How a function becomes a tool: its annotations, its description, and its failures as one-line tool errors.

Why a module of its own: the read tools (`server`) and the write tools (`write_tools`) register the same way and
report failures the same way; this is that way, stated once.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from m3graph.errors import M3GraphError
from m3graph.service.output import one_line

log = logging.getLogger("m3graph.mcp.server")

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DESTROY = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


@contextlib.contextmanager
def errors(tool: str) -> Iterator[None]:
    """Any failure becomes a ToolError with one line: m3graph's own errors as they are, others with their type."""
    try:
        yield
    except ToolError:
        raise
    except M3GraphError as exc:
        raise ToolError(one_line(str(exc))) from None
    except (ValueError, LookupError, OSError) as exc:
        raise ToolError(one_line(f"{type(exc).__name__}: {exc}")) from None
    except Exception as exc:
        log.exception("tool %s failed", tool)
        raise ToolError(one_line(f"{type(exc).__name__}: {exc}")) from None


def tool(server: MCPServer, annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers a function as a tool; its docstring, joined into one paragraph, is the description."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        server.add_tool(fn, description=" ".join((fn.__doc__ or "").split()), annotations=annotations)
        return fn

    return register


__all__ = ["DESTROY", "READ", "WRITE", "errors", "tool"]
