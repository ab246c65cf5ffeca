"""Which names a local HTTP server answers to: shared by the MCP server and the explorer.

Why a Host check at all: a server on loopback is still reachable from every web page the user opens, and DNS
rebinding can make a foreign name (evil.example) resolve to 127.0.0.1, so the browser sends that page's requests
(with its own Host header) to this server. Answering only to the bound address, or the loopback names when
bound to loopback, turns such a request away before it reaches any route. Pure functions, no web framework, so
both servers use the same rules.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def port_problem(port: int) -> str | None:
    """Why `port` cannot be listened on (None when it can)."""
    return None if 0 < port < 65536 else f"port must be 1-65535, got {port}"


def netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def allowed_hosts(host: str, port: int, extra: Sequence[str] = ()) -> list[str]:
    """Host header values this server answers to: its own address, plus every loopback name when on loopback
    (127.0.0.2 is loopback too, and must answer to the address it was bound to and prints)."""
    names = list(dict.fromkeys([host, *LOOPBACK_NAMES])) if is_loopback(host) else [host]
    return [netloc(n, port) for n in names] + list(extra)


def host_allowed(header: str | None, allowed: Iterable[str]) -> bool:
    """Case-insensitive match of a request's Host header against `allowed` (an absent header is refused)."""
    return header is not None and header.lower() in {a.lower() for a in allowed}
