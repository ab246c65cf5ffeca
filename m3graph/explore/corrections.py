"""Corrections: identity votes (and their undo), facts marked superseded or restored by hand (and cleared), and
deletions, through the service's typed requests.

A correction made here is the same request the CLI and MCP build, so it is checked and written the same way.
Every write needs the CSRF field (checked by `Explorer.form`); a deletion also needs its confirmation box.
"""

from __future__ import annotations

import logging
import re

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.explore.context import Explorer, blank_none
from m3graph.service import CorrectFactRequest, DeleteRequest, UndoVoteRequest, VoteRequest
from m3graph.service.results import VoteResult

log = logging.getLogger(__name__)
KINDS = ("clip", "video", "character")
_SLOT = re.compile(r"^(face|voice|speaker)_(\d+) · (.+)$")


def register(app: FastAPI, ex: Explorer) -> None:
    service = ex.service

    @app.post("/vote")
    async def vote(request: Request) -> Response:
        fields = await ex.form(request)
        done = service.vote(VoteRequest(a=fields.get("a", ""), b=fields.get("b", ""),
                                        verdict=fields.get("verdict", ""), note=blank_none(fields.get("note"))),
                            source_note="explorer")
        return ex.back(fields, "/", vote_said(ex, done))

    @app.post("/vote/undo")
    async def undo(request: Request) -> Response:
        fields = await ex.form(request)
        undone = service.undo_vote(UndoVoteRequest(vote_id=fields.get("vote_id", "")))
        said = (f"Vote {undone.vote_id} undone: the identities are as they were before it." if undone.undone
                else f"Vote {undone.vote_id} was already undone; nothing changed.")
        return ex.back(fields, "/", said)

    @app.post("/fact/correct")
    async def correct_fact(request: Request) -> Response:
        fields = await ex.form(request)
        fixed = service.correct_fact(CorrectFactRequest(memory_id=fields.get("memory_id", ""),
                                                        state=fields.get("state", ""),
                                                        note=blank_none(fields.get("note"))), via="explorer")
        what = {"superseded": "marked superseded by hand", "current": "restored by hand",
                "clear": "no longer corrected by hand"}.get(fixed.state, fixed.state)
        slot = slot_said(ex, fixed.slot)
        said = (f"The fact “{slot}” is {what}: it {'holds' if fixed.current else 'no longer holds'}." if fixed.changed
                else f"The fact “{slot}” was already {what}; nothing changed.")
        return ex.back(fields, "/", said)

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
            source_id, _, index = ident.rpartition("/")
            what = DeleteRequest(kind="clip", video=source_id, clip=index)
        else:
            what = DeleteRequest(kind=kind, video=ident)
        service.delete(what)
        log.info("explorer deleted %s %s", kind, ident)
        return ex.back({}, "/", f"Deleted {kind} {ident}.")


def slot_said(ex: Explorer, slot: str) -> str:
    """A fact's slot as a person reads it: "face_4 · favourite fruit" -> "Mia (character_4) · favourite fruit"."""
    found = _SLOT.match(slot)
    if found is None:
        return slot
    char = ex.service.evidence.characters_of([int(found.group(2))]).get(int(found.group(2)))
    return slot if char is None else f"{ex.person(char)} · {found.group(3)}"


def vote_said(ex: Explorer, done: VoteResult) -> str:
    """The confirmation of a vote: what was recorded and who the two are now."""
    v = done.vote
    now = [f"{e} is now {ex.person(c)}" for e, c in done.characters.items() if c is not None]
    verdict = "the same person" if v.verdict == "same" else "not the same person"
    return (f"Recorded vote {v.vote_id}: entities {v.a} and {v.b} are {verdict}"
            + (f" ({'; '.join(now)})" if now else "") + ". Undo it under \"History of manual votes\".")
