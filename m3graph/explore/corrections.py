"""Corrections: identity votes (and their undo), facts marked superseded or restored by hand (and cleared), and
deletions, through the service's typed requests.

A correction made here is the same request the CLI and MCP build, so it is checked and written the same way.
Every write needs the CSRF field (checked by `Explorer.form`); a deletion also needs its confirmation box.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.explore.context import Explorer, blank_none
from m3graph.service import CorrectFactRequest, DeleteRequest, UndoVoteRequest, VoteRequest

log = logging.getLogger(__name__)
KINDS = ("clip", "video", "character")


def register(app: FastAPI, ex: Explorer) -> None:
    service = ex.service

    @app.post("/vote")
    async def vote(request: Request) -> Response:
        fields = await ex.form(request)
        service.vote(VoteRequest(a=fields.get("a", ""), b=fields.get("b", ""), verdict=fields.get("verdict", ""),
                                 note=blank_none(fields.get("note"))), source_note="explorer")
        return ex.back(fields, "/")

    @app.post("/vote/undo")
    async def undo(request: Request) -> Response:
        fields = await ex.form(request)
        service.undo_vote(UndoVoteRequest(vote_id=fields.get("vote_id", "")))
        return ex.back(fields, "/")

    @app.post("/fact/correct")
    async def correct_fact(request: Request) -> Response:
        fields = await ex.form(request)
        service.correct_fact(CorrectFactRequest(memory_id=fields.get("memory_id", ""), state=fields.get("state", ""),
                                                note=blank_none(fields.get("note"))), via="explorer")
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
            what = DeleteRequest(kind="character", char_id=ident)
        elif kind == "clip":
            video_id, _, index = ident.rpartition("/")
            what = DeleteRequest(kind="clip", video=video_id, clip=index)
        else:
            what = DeleteRequest(kind=kind, video=ident)
        service.delete(what)
        log.info("explorer deleted %s %s", kind, ident)
        return RedirectResponse("/", status_code=303)
