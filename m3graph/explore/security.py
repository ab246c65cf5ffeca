"""Who may use a running explorer: the analyst who launched it, and no web page they happen to visit.

The server listens on loopback by default, but any page in the analyst's browser can still send requests to
127.0.0.1. So every request needs the per-launch token (given once in the printed URL, then kept in a
SameSite=Strict, HttpOnly cookie), and every write additionally needs a same-origin `Origin` (or `Referer`, or
the browser's `Sec-Fetch-Site`) and a CSRF field derived from the token: a foreign page can neither read the
token nor forge the field.
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


def same_origin(origin: str | None, referer: str | None, host: str | None, fetch_site: str | None = None) -> bool:
    """True when the request comes from a page of this server (scheme-less host:port comparison).

    The pages send no Referer (Referrer-Policy: no-referrer), and under that policy a browser sends `Origin:
    null` with a form POST; it then still says where the request came from in `Sec-Fetch-Site`, a header no page
    can set. So: a browser's `Sec-Fetch-Site` other than same-origin is refused; a real Origin (or Referer) must
    be this host; a null one is accepted only with `Sec-Fetch-Site: same-origin`.
    """
    if not host or (fetch_site is not None and fetch_site != "same-origin"):
        return False
    source = origin if origin and origin != "null" else referer
    if not source:
        return fetch_site == "same-origin"
    return urlsplit(source).netloc == host
