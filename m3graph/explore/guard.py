"""The explorer's front door: Host check, token, same-origin writes, and security headers on every response.

Order matters: a request for a name this server does not answer to (DNS rebinding) is refused before anything
else (421 Misdirected Request), then the per-launch token, then writes must come from this server's own pages.
Every response, refusals included, carries headers that keep the pages out of frames (clickjacking on the
vote and delete buttons), stop MIME sniffing of served media, keep URLs out of Referer, and allow scripts,
styles and media from this server only (the templates have no inline script or style).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from m3graph.explore.security import COOKIE, same_origin, token_ok
from m3graph.http_guard import host_allowed

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

Next = Callable[[Request], Awaitable[Response]]


def install(app: FastAPI, token: str, hosts: Sequence[str] | None) -> None:
    """`hosts`: the Host header values to answer (None: any, for an app mounted behind a checking proxy)."""

    async def admit(request: Request, call_next: Next) -> Response:
        if hosts is not None and not host_allowed(request.headers.get("host"), hosts):
            return HTMLResponse("this explorer does not answer to that host name", status_code=421)
        if request.url.path == "/healthz":  # liveness for compose/orchestrators: says nothing about the graph
            return Response("ok", media_type="text/plain")
        presented = request.query_params.get("token")
        if presented is not None:
            if not token_ok(token, presented):
                return HTMLResponse("wrong token", status_code=401)
            clean = request.url.remove_query_params("token")
            response: Response = RedirectResponse(str(clean.path) + (f"?{clean.query}" if clean.query else ""),
                                                  status_code=303)
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return response
        if not token_ok(token, request.cookies.get(COOKIE)):
            return HTMLResponse("This explorer needs the link with its token that `m3graph explore` printed.",
                                status_code=401)
        if request.method not in ("GET", "HEAD") and not same_origin(
                request.headers.get("origin"), request.headers.get("referer"), request.headers.get("host"),
                request.headers.get("sec-fetch-site")):
            return HTMLResponse("cross-origin write refused", status_code=403)
        return await call_next(request)

    @app.middleware("http")
    async def guard(request: Request, call_next: Next) -> Response:
        response = await admit(request, call_next)
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        return response
