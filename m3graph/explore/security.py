"""Who may use a running explorer: the analyst who launched it, and no web page they happen to visit.

The server listens on loopback by default, but any page in the analyst's browser can still send requests to
127.0.0.1. So every request needs the per-launch token (given once in the printed URL, then kept in a
SameSite=Strict, HttpOnly cookie), and every write additionally needs a same-origin `Origin` (or `Referer`)
and a CSRF field derived from the token: a foreign page can neither read the token nor forge the field.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

COOKIE = "m3graph_explore"


def new_token() -> str:
    return secrets.token_urlsafe(24)


def csrf_for(token: str) -> str:
    """The form field every write must carry; derived, so it never reveals the token itself."""
    return hmac.new(token.encode(), b"m3graph-explore-csrf", hashlib.sha256).hexdigest()


def token_ok(token: str, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(token.encode(), presented.encode())


def same_origin(origin: str | None, referer: str | None, host: str | None) -> bool:
    """True when the request comes from a page of this server (scheme-less host:port comparison)."""
    if not host:
        return False
    source = origin if origin and origin != "null" else referer
    if not source:
        return False
    return urlsplit(source).netloc == host
