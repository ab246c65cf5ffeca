"""Corrections: identity votes (and their undo) and deletions, each one of the store's own writes.

A correction made here is the same fact the CLI, MCP and chat speakers write. Every write needs the CSRF field
(checked by `Explorer.form`); a deletion also needs its confirmation box.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.explore.context import Explorer, whole_number

log = logging.getLogger(__name__)
KINDS = ("clip", "video", "character")


def register(app: FastAPI, ex: Explorer) -> None:
    graph = ex.graph

    @app.post("/vote")
    async def vote(request: Request) -> Response:
        fields = await ex.form(request)
        verdict = fields.get("verdict")
        if verdict not in ("same", "different"):
            raise InvalidInputError(f"verdict must be 'same' or 'different', got {verdict!r}")
        graph.vote_identity(whole_number(fields, "a"), whole_number(fields, "b"), verdict,
                            note=fields.get("note") or "explorer")
        return ex.back(fields, "/")

    @app.post("/vote/undo")
    async def undo(request: Request) -> Response:
        fields = await ex.form(request)
        graph.undo_vote(whole_number(fields, "vote_id"))
        return ex.back(fields, "/")

    @app.get("/delete/{kind}/{ident:path}", response_class=HTMLResponse)
    def confirm_delete(request: Request, kind: str, ident: str) -> Response:
        if kind not in KINDS:
            raise NotFoundError(f"nothing of kind {kind!r} can be deleted")
        return ex.page(request, "delete.html", kind=kind, ident=ident)

    @app.post("/delete")
    async def delete(request: Request) -> Response:
        fields = await ex.form(request)
        if fields.get("confirm") != "yes":
            raise InvalidInputError("deletion needs the confirmation box ticked")
        kind, ident = fields.get("kind", ""), fields.get("ident", "")
        if kind == "character":
            graph.delete_character(whole_number(fields, "ident"))
        elif kind == "video":
            graph.delete_video(ident)
        elif kind == "clip":
            video_id, _, index = ident.rpartition("/")
            graph.delete_clip(video_id, whole_number({"clip": index}, "clip"))
        else:
            raise InvalidInputError(f"nothing of kind {kind!r} can be deleted")
        log.info("explorer deleted %s %s", kind, ident)
        return RedirectResponse("/", status_code=303)
