"""The write tools, registered only with `m3graph mcp --allow-writes`: notes, ingestion, identity votes, fact
corrections and deletes (their descriptions are written for the model that calls them, as in `server`).

Why a module of its own: `server` holds the read tools an agent always sees; the tools that change memory are
a separate, opt-in contract, and the server module stays one screenful of read tools.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from m3graph.mcp.answers import Cursor, Limit, paged, send
from m3graph.mcp.service import McpService
from m3graph.mcp.tooling import DESTROY, READ, WRITE, errors, tool
from m3graph.service import requests as rq
from m3graph.service.requests import (
    CorrectFactRequest,
    DeleteRequest,
    IngestStatusRequest,
    UndoVoteRequest,
    VoteRequest,
)
from m3graph.service.results import JobList

EntityId = rq.EntityId


def write_tools(server: MCPServer, svc: McpService) -> None:
    """remember, ingest_chat, ingest, ingest_status, vote_same, vote_different, undo_vote, correct_fact, delete."""

    @tool(server, WRITE)
    def remember(
        text: Annotated[str, Field(min_length=1, description="The note, as one or a few sentences.")],
        source: Annotated[str | None, Field(description="Notes source to file it under (default 'agent-notes'); "
                                                        "a new id becomes a notes source, a video's or "
                                                        "conversation's id is refused.")] = None,
        speaker: Annotated[str | None, Field(description="Who writes it (default 'agent'); a name is stored as "
                                                         "an agent's ('Lily (agent)'), never as a person of "
                                                         "another source.")] = None,
    ) -> CallToolResult:
        """Add an agent's note to long-term memory, the way a chat turn is stored: a new session (clip) of a
        notes source, one episodic memory marked '[agent note]', embedded for search. Notes never go into a
        video's or conversation's timeline and never speak as one of its people. Returns the source, the clip
        index and the turn id. It is searchable at once."""
        with errors("remember"):
            return send(svc.remember(text, source, speaker))

    @tool(server, WRITE)
    def ingest_chat(
        path: Annotated[str, Field(description="A conversation file the server can read: LoCoMo or generic "
                                               "JSON, SRT/WebVTT subtitles, or 'Speaker: text' lines.")],
        source_id: Annotated[str | None, Field(description="Store it under this source id (default: from "
                                                           "the file).")] = None,
    ) -> CallToolResult:
        """Ingest a conversation or transcript file: each session becomes a clip, each turn an episodic memory,
        each speaker a character. The file is validated before anything is written; sessions already stored
        are skipped, so re-running appends only what is new. Paths must lie under the server's files root."""
        with errors("ingest_chat"):
            return send(svc.ingest_chat(path, source_id))

    @tool(server, WRITE)
    def ingest(
        paths: Annotated[list[str], Field(min_length=1, description="Video files (or, with live, one "
                                                                    "directory) under the server's files "
                                                                    "root.")],
        live: Annotated[bool, Field(description="Watch the one directory given and ingest each new clip "
                                                "file as it appears, until the server stops.")] = False,
        source_id: Annotated[str | None, Field(description="Id for a single video (default: the file name).")]
        = None,
    ) -> CallToolResult:
        """Start ingesting videos in the background (30 s clips, faces, voices, memorization), and return a job
        at once. Poll ingest_status with its job_id for each video's clip, stage and progress lines; clips
        become searchable as they finish."""
        with errors("ingest"):
            return send(svc.ingest(paths, live, source_id))

    @tool(server, READ)
    def ingest_status(
        job_id: rq.JobId = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> CallToolResult:
        """Progress of background ingestion jobs started by ingest: state (running, watching, done, failed with
        the reason), per video the current clip of the total and its stage, and the latest progress lines.
        Without job_id, every job (paged: limit, cursor)."""
        with errors("ingest_status"):
            status = svc.ingest_status(IngestStatusRequest(job_id=job_id))
            return send(paged(status, "jobs", limit, cursor) if isinstance(status, JobList) else status)

    @tool(server, WRITE)
    def vote_same(a: EntityId, b: EntityId,
                  note: rq.Note = None) -> CallToolResult:
        """Record a manual judgement that two entities (faces, voices or speakers) are the SAME person. It
        overrides the model's votes and merges their characters; returns the vote (with its vote_id, for
        undo_vote) and the resulting character of each."""
        with errors("vote_same"):
            return send(svc.vote(VoteRequest(a=a, b=b, verdict="same", note=note), "mcp"))

    @tool(server, WRITE)
    def vote_different(a: EntityId, b: EntityId,
                       note: rq.Note = None) -> CallToolResult:
        """Record a manual judgement that two entities are DIFFERENT people. It overrides the model's votes and
        splits their characters if they were merged; returns the vote (with its vote_id) and each entity's
        character afterwards."""
        with errors("vote_different"):
            return send(svc.vote(VoteRequest(a=a, b=b, verdict="different", note=note), "mcp"))

    @tool(server, WRITE)
    def undo_vote(vote_id: rq.VoteId) -> CallToolResult:
        """Undo a manual identity vote: the grouping goes back to what the model's votes say. Undoing twice is
        harmless."""
        with errors("undo_vote"):
            return send(svc.undo_vote(UndoVoteRequest(vote_id=vote_id)))

    @tool(server, WRITE)
    def correct_fact(memory_id: rq.MemoryId, state: rq.FactState,
                     note: rq.FactNote = None) -> CallToolResult:
        """Correct one version of a fact by hand (its memory_id from history or a search_memory hit):
        'superseded' when it does not
        hold (the version it displaced holds again), 'current' to keep it holding whatever newer value comes,
        'clear' to undo either. Only facts with a slot (those history lists) can be corrected; repeating a
        correction changes nothing. Returns whether it changed anything and whether the fact holds now."""
        with errors("correct_fact"):
            request = CorrectFactRequest(memory_id=memory_id, state=state, note=note)
            return send(svc.correct_fact(request, "mcp"))

    @tool(server, DESTROY)
    def delete(
        kind: rq.DeleteKind,
        video: rq.DeleteVideo = None,
        clip: rq.DeleteClip = None,
        char_id: rq.DeleteCharId = None,
    ) -> CallToolResult:
        """Permanently delete a clip, a whole source, or a person (character) with everything derived from
        it: memories, evidence, votes, face crops, voice snippets. Cannot be undone; confirm with the user
        first."""
        with errors("delete"):
            return send(svc.delete(DeleteRequest(kind=kind, video=video, clip=clip, char_id=char_id)))
