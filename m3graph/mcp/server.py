"""The MCP server: each tool's JSON schema, annotations and a description written for the model that calls it.

Why this shape: an agent chooses tools from their descriptions alone, so each says what the tool returns, when
to use it rather than another, and what the ids in its output feed into. Annotations tell a client what it may
call without asking (`readOnlyHint`) and what to confirm first (`destructiveHint`). Read-only is the default:
without `--allow-writes` the write tools are not registered at all, so a client cannot even see them. Every
failure is a tool error result (`isError: true`) whose text is one line naming the reason; arguments that fail
the schema are reported the same way, never as a protocol error or a traceback.

Why this module is over 400 lines: it is one contract, the tool list an agent reads (each tool's arguments,
annotations and description side by side); split across modules, a tool's promise would be read in pieces.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
from collections.abc import Callable, Iterator
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.utilities.types import Audio, Image
from mcp_types import ToolAnnotations
from pydantic import Field, SecretStr, ValidationError

from m3graph.errors import M3GraphError
from m3graph.mcp.security import StaticTokenVerifier, auth_settings
from m3graph.mcp.service import McpService
from m3graph.service import requests as rq
from m3graph.service.evidence import MAX_SURROGATES
from m3graph.service.output import one_line
from m3graph.service.requests import (
    AskRequest,
    CharacterRequest,
    CorrectFactRequest,
    DeleteRequest,
    FetchClipRequest,
    HistoryRequest,
    IngestStatusRequest,
    SearchRequest,
    TimelineRequest,
    UndoVoteRequest,
    VoteRequest,
)

log = logging.getLogger(__name__)


def _version() -> str:
    try:
        return importlib.metadata.version("m3graph")
    except importlib.metadata.PackageNotFoundError:
        return "0"


INSTRUCTIONS = """m3graph is a long-term memory of videos and conversations, stored as a graph in Neo4j. \
Sources (videos, chat logs) are cut into clips; each clip holds episodic memories (what happened) and semantic \
memories (lasting facts). People appear as <character_K> tags: K is a stable character id, usable in \
character(char_id=K) and inside search queries to scope them to that person.
Start with list_videos, then search_memory for evidence or ask for a full answer with its trace; use \
fetch_clip to read a clip and its neighbours, character to learn who someone is, video_timeline for a \
source's clips, fetch_media to see a face crop or hear a voice snippet, file_text for the text of a file a \
memory cites, graph_schema and read_cypher for anything else (read-only Cypher)."""

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DESTROY = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)

# Argument types are the request fields' own (`m3graph.service.requests`): bounds and descriptions are stated
# once, so a tool's JSON schema is the request's (tests/test_front_ends_agree.py checks it).
Videos = rq.Videos
BeforeClip = rq.BeforeClip
EntityId = rq.EntityId


class _Server(MCPServer):
    """MCPServer whose argument-validation errors are one line like every other tool error."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                err = cause.errors()[0]
                where = ".".join(str(p) for p in err["loc"]) or "arguments"
                more = f" (and {cause.error_count() - 1} more)" if cause.error_count() > 1 else ""
                raise ToolError(f"invalid argument {where}: {err['msg']}{more}") from cause
            prefix = f"Error executing tool {name}: "  # the SDK's wrapper; the reason alone is the message
            text = str(exc)
            if text.startswith(prefix):
                raise ToolError(text.removeprefix(prefix)) from exc.__cause__
            raise


@contextlib.contextmanager
def _errors(tool: str) -> Iterator[None]:
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


def build_server(service: McpService, allow_writes: bool = False, token: SecretStr | None = None,
                 http: tuple[str, int] | None = None) -> MCPServer:
    """The server with the read tools, plus the write tools when `allow_writes`; `token` guards HTTP."""
    auth: dict[str, Any] = {}
    if token is not None:
        host, port = http or ("127.0.0.1", 0)
        auth = {"token_verifier": StaticTokenVerifier(token), "auth": auth_settings(host, port)}
    server = _Server("m3graph", title="m3graph memory", version=_version(), instructions=INSTRUCTIONS,
                     log_level="WARNING", **auth)
    _read_tools(server, service)
    if allow_writes:
        _write_tools(server, service)
    return server


def _tool(server: MCPServer, annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers a function as a tool; its docstring, joined into one paragraph, is the description."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        server.add_tool(fn, description=" ".join((fn.__doc__ or "").split()), annotations=annotations)
        return fn

    return register


def _read_tools(server: MCPServer, svc: McpService) -> None:
    @_tool(server, READ)
    def search_memory(
        query: rq.Query,
        videos: Videos = None,
        before_clip: BeforeClip = None,
        mode: rq.Mode = "clip",
        k: rq.K = None,
        as_of: rq.AsOf = None,
        all_versions: rq.AllVersions = False,
        since: rq.When = None,
        until: rq.When = None,
        characters: rq.Characters = (),
        speakers: rq.SpeakerNames = (),
    ) -> dict[str, Any]:
        """Search the memory the way the question-answering controller does: hybrid ranking (meaning, by
        embeddings, fused with keyword BM25), floored so unrelated memories are dropped. Returns clips (source
        id, clip index, time, score) with their memories as text, people as <character_K>. Use mode 'clip' to
        read whole moments and 'node' for individual facts ("what is Mia's job", "what is the name of
        <character_3>"). Pass before_clip to see only what was known at that clip. An empty list means nothing
        in scope matches; rephrase or widen the scope. Facts that changed show their current version; pass
        as_of (a date or VIDEO#N) for the version that held then, all_versions for every version (superseded
        ones say when), or use the history tool for one subject's versions. since/until keep clips that started
        in that window (ISO times, UTC); characters scopes to those <character_K> ids, speakers to the lines
        those people said in a conversation."""
        with _errors("search_memory"):
            return svc.search(SearchRequest(query=query, videos=videos, before_clip=before_clip, mode=mode, k=k,
                                            as_of=as_of, all_versions=all_versions, since=since, until=until,
                                            characters=characters, speakers=speakers)).to_json()

    @_tool(server, READ)
    def fetch_clip(
        video: Annotated[rq.VideoId, Field(description="The source id (from list_videos or a search result).")],
        clip: rq.ClipIndex,
        before: Annotated[rq.Neighbours, Field(description="Also this many clips before it.")] = 0,
        after: Annotated[rq.Neighbours, Field(description="Also this many clips after it.")] = 0,
    ) -> dict[str, Any]:
        """Read one clip in full: its processing state, the faces and voices perceived in it with their
        characters, and every memory of it (and of up to 5 neighbouring clips before/after), people as
        <character_K>. Use it after a search hit to read the surrounding context, or to check what a clip
        holds."""
        with _errors("fetch_clip"):
            return svc.fetch_clip(FetchClipRequest(video=video, clip=clip, before=before, after=after)).to_json()

    @_tool(server, READ)
    def character(
        char_id: rq.CharId | None = None,
        name: rq.Name | None = None,
        videos: Videos = None,
    ) -> dict[str, Any]:
        """Who a person is: give char_id or name (exactly one). Returns the character's faces, voices and chat
        speakers (entity ids), merged ids (aliases), the face-voice SAME_AS votes with the clips that cast them,
        manual identity votes, the semantic facts about them, episodes they appear in, first/last clip per
        source, and the storage keys of face crops and voice snippets (fetch_media shows or plays one). With a
        name, other candidates are listed too."""
        with _errors("character"):
            return svc.character(CharacterRequest(char_id=char_id, name=name, videos=videos)).to_json()

    @_tool(server, READ)
    def list_videos() -> dict[str, Any]:
        """Every source in memory (videos and conversations): id, name, number of clips, duration, start time
        and number of memories. Start here to learn which ids the other tools accept."""
        with _errors("list_videos"):
            return svc.list_videos().to_json()

    @_tool(server, READ)
    def video_timeline(
        video: rq.VideoId,
    ) -> dict[str, Any]:
        """A source's clips in order: time span, processing state (and why a clip failed), how many memories,
        which faces/voices/speakers occur, and a one-line summary (its first memory, people as
        <character_K>). Use it to find which clip to fetch, or whether ingestion is complete."""
        with _errors("video_timeline"):
            return svc.video_timeline(TimelineRequest(video=video)).to_json()

    @_tool(server, READ)
    def history(
        video: rq.VideoId,
        subject: rq.Subject,
        attribute: rq.Attribute = None,
        k: rq.HistoryK = 100,
    ) -> dict[str, Any]:
        """How one subject's facts changed in one source: slot by slot ("Mia · favourite fruit"), every version
        oldest first with its value, where it was said, whether it holds now, when a newer fact superseded it,
        and facts the source states both ways (contradicts). Use it for "what was X before", "when did X
        change", or to check a surprising answer."""
        with _errors("history"):
            return svc.history(HistoryRequest(video=video, subject=subject, attribute=attribute, k=k)).to_json()

    @_tool(server, READ)
    def ask(
        question: rq.Question,
        videos: Videos = None,
        before_clip: BeforeClip = None,
    ) -> dict[str, Any]:
        """Answer a question from memory with m3graph's own controller: up to H rounds of search and reading by
        the configured chat model, then an answer. Returns the answer, the outcome ('answered', 'forced',
        'abstained' when memory does not hold it, 'failed'), and the trace: every round's search, the memory
        lines shown, tokens and time. Slower than search_memory (a model runs); prefer search_memory when you
        can read the evidence yourself."""
        with _errors("ask"):
            return svc.ask(AskRequest(question=question, videos=videos, before_clip=before_clip)).to_json()

    @_tool(server, READ)
    def file_text(
        sha256: Annotated[str, Field(pattern="^[0-9a-fA-F]{64}$",
                                     description="The file's key: the sha256 of a memory's files entry.")],
        limit: Annotated[int, Field(ge=1, le=MAX_SURROGATES, description="At most this many surrogate memories "
                                                                        "(default all, up to 200).")]
        = MAX_SURROGATES,
    ) -> dict[str, Any]:
        """Read a file shared in a conversation (a photo, PDF, spreadsheet, chart) as the text that stands for
        it: its name, kind, type, size, where and when it was shared, and every surrogate memory describing it
        in order (PDF pages and sections, table rows with column ranges, chart labels, a photo's size, colours,
        text read in it and the people in it as <character_K>). Use it when a search hit cites a file (its
        memories carry files: [{sha256, name, kind, shared_at}]) and the hit alone does not answer. It never
        returns the file's bytes."""
        with _errors("file_text"):
            return svc.file_text(sha256, limit).to_json()

    @_tool(server, READ)
    def graph_schema() -> dict[str, Any]:
        """The graph's model, for writing read_cypher queries: node labels with their key, properties and a
        sentence on what each means; relationship types with their endpoints; how tags work; the indexes and
        constraints the server reports; applied schema migrations; node and relationship counts."""
        with _errors("graph_schema"):
            return svc.graph_schema()

    @_tool(server, READ)
    def read_cypher(
        query: Annotated[str, Field(min_length=1, description="One read-only Cypher statement. Put values in "
                                                              "$parameters, not in the text.")],
        params: Annotated[dict[str, Any] | None, Field(description="Values for the query's $parameters.")] = None,
    ) -> dict[str, Any]:
        """Run one read-only Cypher query (see graph_schema for the model). Guarded: the server's plan must be
        read-only, file/network/admin procedures (LOAD CSV, apoc.load.*, dbms.*, ...) are refused, it runs in a
        read transaction with a 10 s timeout, at most 1000 rows come back (truncated says so), and vectors
        (embeddings) are replaced by a placeholder. A refusal names its reason (write, procedure, syntax,
        timeout). Prefer the other tools for search: they rank by meaning, Cypher does not."""
        with _errors("read_cypher"):
            return svc.read_cypher(query, params).to_json()


    @_tool(server, READ)
    def fetch_media(
        video: rq.VideoId,
        clip: rq.ClipIndex,
        uri: Annotated[str, Field(min_length=1, max_length=1024, description="A crop_uri or audio_uri of that "
                                                                             "clip, as the graph holds it.")],
    ) -> Image | Audio:
        """See or hear the evidence behind a face or voice: the face crop (image) or voice snippet (audio) that
        the graph references from that clip, as crop_uri / audio_uri in fetch_clip, character or read_cypher
        results. Media comes from m3graph's media store (a directory or an object store), never from a URL."""
        with _errors("fetch_media"):
            data, kind = svc.fetch_media(video, clip, uri)
            return Image(data=data, format="jpeg" if data[:3] == b"\xff\xd8\xff" else "png") if kind == "image" \
                else Audio(data=data, format="wav")


def _write_tools(server: MCPServer, svc: McpService) -> None:
    @_tool(server, WRITE)
    def remember(
        text: Annotated[str, Field(min_length=1, description="The note, as one or a few sentences.")],
        source: Annotated[str | None, Field(description="Notes source to file it under (default 'agent-notes'); "
                                                        "a new id becomes a notes source, a video's or "
                                                        "conversation's id is refused.")] = None,
        speaker: Annotated[str | None, Field(description="Who writes it (default 'agent'); a name is stored as "
                                                         "an agent's ('Lily (agent)'), never as a person of "
                                                         "another source.")] = None,
    ) -> dict[str, Any]:
        """Add an agent's note to long-term memory, the way a chat turn is stored: a new session (clip) of a
        notes source, one episodic memory marked '[agent note]', embedded for search. Notes never go into a
        video's or conversation's timeline and never speak as one of its people. Returns the source, the clip
        index and the turn id. It is searchable at once."""
        with _errors("remember"):
            return svc.remember(text, source, speaker)

    @_tool(server, WRITE)
    def ingest_chat(
        path: Annotated[str, Field(description="A conversation file the server can read: LoCoMo or generic "
                                               "JSON, SRT/WebVTT subtitles, or 'Speaker: text' lines.")],
        source_id: Annotated[str | None, Field(description="Store it under this source id (default: from "
                                                           "the file).")] = None,
    ) -> dict[str, Any]:
        """Ingest a conversation or transcript file: each session becomes a clip, each turn an episodic memory,
        each speaker a character. The file is validated before anything is written; sessions already stored
        are skipped, so re-running appends only what is new. Paths must lie under the server's files root."""
        with _errors("ingest_chat"):
            return svc.ingest_chat(path, source_id)

    @_tool(server, WRITE)
    def ingest(
        paths: Annotated[list[str], Field(min_length=1, description="Video files (or, with live, one "
                                                                    "directory) under the server's files "
                                                                    "root.")],
        live: Annotated[bool, Field(description="Watch the one directory given and ingest each new clip "
                                                "file as it appears, until the server stops.")] = False,
        video_id: Annotated[str | None, Field(description="Id for a single video (default: the file name).")]
        = None,
    ) -> dict[str, Any]:
        """Start ingesting videos in the background (30 s clips, faces, voices, memorization), and return a job
        at once. Poll ingest_status with its job_id for each video's clip, stage and progress lines; clips
        become searchable as they finish."""
        with _errors("ingest"):
            return svc.ingest(paths, live, video_id).to_json()

    @_tool(server, READ)
    def ingest_status(
        job_id: rq.JobId = None,
    ) -> dict[str, Any]:
        """Progress of background ingestion jobs started by ingest: state (running, watching, done, failed with
        the reason), per video the current clip of the total and its stage, and the latest progress lines."""
        with _errors("ingest_status"):
            return svc.ingest_status(IngestStatusRequest(job_id=job_id)).to_json()

    @_tool(server, WRITE)
    def vote_same(a: EntityId, b: EntityId,
                  note: rq.Note = None) -> dict[str, Any]:
        """Record a manual judgement that two entities (faces, voices or speakers) are the SAME person. It
        overrides the model's votes and merges their characters; returns the vote (with its vote_id, for
        undo_vote) and the resulting character of each."""
        with _errors("vote_same"):
            return svc.vote(VoteRequest(a=a, b=b, verdict="same", note=note), "mcp").to_json()

    @_tool(server, WRITE)
    def vote_different(a: EntityId, b: EntityId,
                       note: rq.Note = None) -> dict[str, Any]:
        """Record a manual judgement that two entities are DIFFERENT people. It overrides the model's votes and
        splits their characters if they were merged; returns the vote (with its vote_id) and each entity's
        character afterwards."""
        with _errors("vote_different"):
            return svc.vote(VoteRequest(a=a, b=b, verdict="different", note=note), "mcp").to_json()

    @_tool(server, WRITE)
    def undo_vote(vote_id: rq.VoteId) -> dict[str, Any]:
        """Undo a manual identity vote: the grouping goes back to what the model's votes say. Undoing twice is
        harmless."""
        with _errors("undo_vote"):
            return svc.undo_vote(UndoVoteRequest(vote_id=vote_id)).to_json()

    @_tool(server, WRITE)
    def correct_fact(memory_id: rq.MemoryId, state: rq.FactState,
                     note: rq.FactNote = None) -> dict[str, Any]:
        """Correct one version of a fact by hand (its memory_id from history): 'superseded' when it does not
        hold (the version it displaced holds again), 'current' to keep it holding whatever newer value comes,
        'clear' to undo either. Only facts with a slot (those history lists) can be corrected; repeating a
        correction changes nothing. Returns whether it changed anything and whether the fact holds now."""
        with _errors("correct_fact"):
            request = CorrectFactRequest(memory_id=memory_id, state=state, note=note)
            return svc.correct_fact(request, "mcp").to_json()

    @_tool(server, DESTROY)
    def delete(
        kind: rq.DeleteKind,
        video: rq.DeleteVideo = None,
        clip: rq.DeleteClip = None,
        char_id: rq.DeleteCharId = None,
    ) -> dict[str, Any]:
        """Permanently delete a clip, a whole source, or a person (character) with everything derived from
        it: memories, evidence, votes, face crops, voice snippets. Cannot be undone; confirm with the user
        first."""
        with _errors("delete"):
            return svc.delete(DeleteRequest(kind=kind, video=video, clip=clip, char_id=char_id)).to_json()
