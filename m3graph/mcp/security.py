"""HTTP transport security: a bearer token on every request and Origin/Host checks against DNS rebinding.

Why both: a tool server on loopback is still reachable from every web page the user opens (a page can POST to
http://127.0.0.1:PORT, and DNS rebinding can make a foreign name resolve there). The token stops a caller that
does not know it; the SDK's transport security (`TransportSecuritySettings`) refuses a request whose Origin is
not this server's own, or whose Host is not a name the server answers to. The token is compared in constant
time and never logged; it comes from `M3GRAPH_MCP_TOKEN` or is generated per launch and printed to stderr.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Sequence

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import SecretStr

from m3graph.errors import ConfigError
from m3graph.http_guard import LOOPBACK_NAMES, allowed_hosts, is_loopback, port_problem
from m3graph.http_guard import netloc as _netloc


def new_token() -> SecretStr:
    return SecretStr(secrets.token_urlsafe(32))


class StaticTokenVerifier:
    """The SDK's TokenVerifier for one shared bearer token (no OAuth server: a local tool server)."""

    def __init__(self, token: SecretStr) -> None:
        if len(token.get_secret_value()) < 16:
            raise ConfigError("the MCP bearer token must be at least 16 characters")
        self._token = token.get_secret_value().encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token="local", client_id="m3graph-mcp-client", scopes=[])
        return None


def parse_http(spec: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[::1]:PORT`` or ``PORT`` (loopback)."""
    host, sep, port = spec.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", spec
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise ConfigError(f"--http {spec!r}: expected HOST:PORT") from None
    if port_problem(number):
        raise ConfigError(f"--http {spec!r}: port must be 1-65535")
    return host, number


def http_security(host: str, port: int, extra_origins: Sequence[str] = (), extra_hosts: Sequence[str] = ()
                  ) -> TransportSecuritySettings:
    """Host and Origin allow-lists: this server's own address (the one it prints), plus the loopback names when
    bound to loopback."""
    names = list(dict.fromkeys([host, *LOOPBACK_NAMES])) if is_loopback(host) else [host]
    hosts = allowed_hosts(host, port, extra_hosts)
    origins = [f"http://{_netloc(n, port)}" for n in names] + [o.rstrip("/") for o in extra_origins]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def auth_settings(host: str, port: int) -> AuthSettings:
    """The SDK requires an issuer URL with a token verifier; this server issues its own static token."""
    return AuthSettings(issuer_url=f"http://{_netloc(host, port)}", resource_server_url=None)
