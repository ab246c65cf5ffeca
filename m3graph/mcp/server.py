"""The MCP server: each tool's JSON schema, annotations and a description written for the model that calls it.

Why this shape: an agent chooses tools from their descriptions alone, so each says what the tool returns, when
to use it rather than another, and what the ids in its output feed into. Annotations tell a client what it may
call without asking (`readOnlyHint`) and what to confirm first (`destructiveHint`). Read-only is the default:
without `--allow-writes` the write tools are not registered at all, so a client cannot even see them. Every
failure is a tool error result (`isError: true`) whose text is one line naming the reason; arguments that fail
the schema are reported the same way, never as a protocol error or a traceback.

What an agent gets back is compact JSON (`answers.send`); every tool that returns a list takes `limit` and
`cursor` and keeps its answer under a response budget, saying in the result when items were left out
(`answers.paged`); `ask` outlives a client's request timeout (`asking`). The write tools are in `write_tools`,
the registration and error rules in `tooling`.
"""

from __future__ import annotations

import importlib.metadata
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.utilities.types import Audio, Image
from mcp_types import CallToolResult
from pydantic import Field, SecretStr, ValidationError

from m3graph.mcp.answers import Cursor, Limit, paged, send
from m3graph.mcp.asking import wait_for
from m3graph.mcp.security import StaticTokenVerifier, auth_settings
from m3graph.mcp.service import McpService
from m3graph.mcp.tooling import READ, errors, tool
from m3graph.mcp.write_tools import write_tools
from m3graph.service import requests as rq
from m3graph.service.evidence import MAX_SURROGATES
from m3graph.service.requests import (
    AskRequest,
    CharacterRequest,
    FetchClipRequest,
    HistoryRequest,
    SearchRequest,
    TimelineRequest,
)


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
memory cites, graph_schema and read_cypher for anything else (read-only Cypher).
Results are compact JSON. Each search hit carries clip_key ("source#N") and started_at (its date), and each of \
its memories memory_id (cite it; correct_fact takes it), turn_id (a conversation turn) and names \
("Mia (character_4)"). A list longer than the response budget (about 8,000 characters) comes as a page: \
page.truncated says what was left out, and page.next_cursor is the cursor to pass to the same tool for the rest; \
limit asks for fewer items. ask answers within 45 s or returns a job_id for ask_status."""

# Argument types are the request fields' own (`m3graph.service.requests`): bounds and descriptions are stated
# once, so a tool's JSON schema is the request's (tests/test_front_ends_agree.py checks it).
Videos = rq.Videos
BeforeClip = rq.BeforeClip


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
        write_tools(server, service)
    return server


def _read_tools(server: MCPServer, svc: McpService) -> None:
    @tool(server, READ)
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
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> CallToolResult:
        """Search the memory the way the question-answering controller does: hybrid ranking (meaning, by
        embeddings, fused with keyword BM25), floored so unrelated memories are dropped. Returns clips (source
        id, clip index, time, score) with their memories as text, people as <character_K>. Use mode 'clip' to
        read whole moments and 'node' for individual facts ("what is Mia's job", "what is the name of
        <character_3>"). Pass before_clip to see only what was known at that clip. An empty list means nothing
        in scope matches; rephrase or widen the scope. Facts that changed show their current version; pass
        as_of (a date or VIDEO#N) for the version that held then, all_versions for every version (superseded
        ones say when), or use the history tool for one subject's versions. since/until keep clips that started
        in that window (ISO times, UTC); characters scopes to those <character_K> ids, speakers to the lines
        those people said in a conversation. Every clip carries clip_key ("source#N") and started_at (its
        date); every memory memory_id (to cite it, or to correct a fact with correct_fact), turn_id (a
        conversation turn) and names ("Mia (character_4)"). Clips come in pages (limit, cursor: see
        page.next_cursor)."""
        with errors("search_memory"):
            found = svc.search(SearchRequest(query=query, videos=videos, before_clip=before_clip, mode=mode, k=k,
                                             as_of=as_of, all_versions=all_versions, since=since, until=until,
                                             characters=characters, speakers=speakers))
            return send(paged(found, "clips", limit, cursor))

    @tool(server, READ)
    def fetch_clip(
        video: Annotated[rq.VideoId, Field(description="The source id (from list_videos or a search result).")],
        clip: rq.ClipIndex,
        before: Annotated[rq.Neighbours, Field(description="Also this many clips before it.")] = 0,
        after: Annotated[rq.Neighbours, Field(description="Also this many clips after it.")] = 0,
    ) -> CallToolResult:
        """Read one clip in full: its processing state, the faces and voices perceived in it with their
        characters, and every memory of it (and of up to 5 neighbouring clips before/after), people as
        <character_K>. Use it after a search hit to read the surrounding context, or to check what a clip
        holds. Clips and memories are cited as in search_memory (clip_key, started_at; memory_id, turn_id,
        names)."""
        with errors("fetch_clip"):
            return send(svc.fetch_clip(FetchClipRequest(video=video, clip=clip, before=before, after=after)))

    @tool(server, READ)
    def character(
        char_id: rq.CharId | None = None,
        name: rq.Name | None = None,
        videos: Videos = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> CallToolResult:
        """Who a person is: give char_id or name (exactly one). Returns the character's faces, voices and chat
        speakers (entity ids), merged ids (aliases), the face-voice SAME_AS votes with the clips that cast them,
        manual identity votes, the semantic facts about them, episodes they appear in, first/last clip per
        source, and the storage keys of face crops and voice snippets (fetch_media shows or plays one). With a
        name, other candidates are listed too. Episodes (each with its memory_id) come in pages (limit,
        cursor)."""
        with errors("character"):
            who = svc.character(CharacterRequest(char_id=char_id, name=name, videos=videos))
            return send(paged(who, "episodes", limit, cursor))

    @tool(server, READ)
    def list_videos(limit: Limit = None, cursor: Cursor = None) -> CallToolResult:
        """Every source in memory (videos and conversations): id, name, number of clips, duration, start time
        and number of memories. Start here to learn which ids the other tools accept. Paged (limit, cursor)."""
        with errors("list_videos"):
            return send(paged(svc.list_videos(), "videos", limit, cursor))

    @tool(server, READ)
    def video_timeline(
        video: rq.VideoId,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> CallToolResult:
        """A source's clips in order: time span, processing state (and why a clip failed), how many memories,
        which faces/voices/speakers occur, and a one-line summary (its first memory, people as
        <character_K>). Use it to find which clip to fetch, or whether ingestion is complete. Paged (limit,
        cursor)."""
        with errors("video_timeline"):
            return send(paged(svc.video_timeline(TimelineRequest(video=video)), "clips", limit, cursor))

    @tool(server, READ)
    def history(
        video: rq.VideoId,
        subject: rq.Subject,
        attribute: rq.Attribute = None,
        k: rq.HistoryK = 100,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> CallToolResult:
        """How one subject's facts changed in one source: slot by slot ("Mia · favourite fruit"), every version
        oldest first with its value, where it was said, whether it holds now, when a newer fact superseded it,
        and facts the source states both ways (contradicts). Use it for "what was X before", "when did X
        change", or to check a surprising answer. Each version's memory_id is what correct_fact takes. Slots
        come in pages (limit, cursor)."""
        with errors("history"):
            found = svc.history(HistoryRequest(video=video, subject=subject, attribute=attribute, k=k))
            return send(paged(found, "slots", limit, cursor))

    @tool(server, READ)
    async def ask(
        question: rq.Question,
        ctx: Context,
        videos: Videos = None,
        before_clip: BeforeClip = None,
    ) -> CallToolResult:
        """Answer a question from memory with m3graph's own controller: up to H rounds of search and reading by
        the configured chat model, then an answer. Returns the answer, the outcome ('answered', 'forced',
        'abstained' when memory does not hold it, 'failed'), and the trace: every round's search, the memory
        lines shown, tokens and time. Slower than search_memory (a model runs); prefer search_memory when you
        can read the evidence yourself. It sends progress while it works; an answer not ready within 45 s comes
        back as {state: 'running', job_id}: call ask_status(job_id) for it."""
        with errors("ask"):
            job = svc.asks.start(AskRequest(question=question, videos=videos, before_clip=before_clip))
            return send(await wait_for(job, svc.ask_wait_s, ctx.report_progress))

    @tool(server, READ)
    async def ask_status(
        job_id: Annotated[str, Field(min_length=1, max_length=200, description="The job_id ask returned.")],
        ctx: Context,
    ) -> CallToolResult:
        """The answer to a question ask was still working on: waits up to 45 s more (sending progress), then
        returns the whole answer as ask does, or {state: 'running', job_id} again. A failed answer is an
        error naming the reason."""
        with errors("ask_status"):
            return send(await wait_for(svc.asks.get(job_id), svc.ask_wait_s, ctx.report_progress))

    @tool(server, READ)
    def file_text(
        sha256: Annotated[str, Field(pattern="^[0-9a-fA-F]{64}$",
                                     description="The file's key: the sha256 of a memory's files entry.")],
        limit: Annotated[int, Field(ge=1, le=MAX_SURROGATES, description="At most this many surrogate memories "
                                                                        "(default all, up to 200).")]
        = MAX_SURROGATES,
        cursor: Cursor = None,
    ) -> CallToolResult:
        """Read a file shared in a conversation (a photo, PDF, spreadsheet, chart) as the text that stands for
        it: its name, kind, type, size, where and when it was shared, and every surrogate memory describing it
        in order (PDF pages and sections, table rows with column ranges, chart labels, a photo's size, colours,
        text read in it and the people in it as <character_K>). Use it when a search hit cites a file (its
        memories carry files: [{sha256, name, kind, shared_at}]) and the hit alone does not answer. It never
        returns the file's bytes. Surrogates come in pages (limit, cursor)."""
        with errors("file_text"):
            page = paged(svc.file_text(sha256, MAX_SURROGATES), "surrogates", limit, cursor)
            if (page.get("page") or {}).get("next_cursor"):
                page["truncated"] = True  # the file's own flag agrees with the page: more surrogates to read
            return send(page)

    @tool(server, READ)
    def graph_schema() -> CallToolResult:
        """The graph's model, for writing read_cypher queries: node labels with their key, properties and a
        sentence on what each means; relationship types with their endpoints; how tags work; the indexes and
        constraints the server reports; applied schema migrations; node and relationship counts."""
        with errors("graph_schema"):
            return send(svc.graph_schema())

    @tool(server, READ)
    def read_cypher(
        query: Annotated[str, Field(min_length=1, description="One read-only Cypher statement. Put values in "
                                                              "$parameters, not in the text.")],
        params: Annotated[dict[str, Any] | None, Field(description="Values for the query's $parameters.")] = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> CallToolResult:
        """Run one read-only Cypher query (see graph_schema for the model). Guarded: the server's plan must be
        read-only, file/network/admin procedures (LOAD CSV, apoc.load.*, dbms.*, ...) are refused, it runs in a
        read transaction with a 10 s timeout, at most 1000 rows come back (truncated says so), and vectors
        (embeddings) are replaced by a placeholder. A refusal names its reason (write, procedure, syntax,
        timeout). Prefer the other tools for search: they rank by meaning, Cypher does not. Rows come in pages
        (limit, cursor: the query runs again)."""
        with errors("read_cypher"):
            return send(paged(svc.read_cypher(query, params), "rows", limit, cursor))


    @tool(server, READ)
    def fetch_media(
        video: rq.VideoId,
        clip: rq.ClipIndex,
        uri: Annotated[str, Field(min_length=1, max_length=1024, description="A crop_uri or audio_uri of that "
                                                                             "clip, as the graph holds it.")],
    ) -> Image | Audio:
        """See or hear the evidence behind a face or voice: the face crop (image) or voice snippet (audio) that
        the graph references from that clip, as crop_uri / audio_uri in fetch_clip, character or read_cypher
        results. Media comes from m3graph's media store (a directory or an object store), never from a URL."""
        with errors("fetch_media"):
            data, kind = svc.fetch_media(video, clip, uri)
            return Image(data=data, format="jpeg" if data[:3] == b"\xff\xd8\xff" else "png") if kind == "image" \
                else Audio(data=data, format="wav")
