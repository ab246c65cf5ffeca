"""What only the MCP front end adds to the application service: guarded Cypher, the schema, file writes, `ask`
as a job, and search hits an agent can cite.

Why a subclass and not more service operations: `read_cypher` and `graph_schema` exist for agents that write
their own queries, and `remember`, `ingest_chat` and `ingest` read files under this server's files roots (a
policy of this front end). Everything else (search, reads, ask, votes, deletes, ingestion status) is
`m3graph.service.MemoryService`, which the CLI, the explorer and the controller's tools share.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.mcp import schema
from m3graph.mcp.asking import ASK_WAIT_S, AskJobs
from m3graph.mcp.jobs import ingest_runner
from m3graph.service import MemoryService, check_source_id, notes
from m3graph.service.evidence import MAX_SURROGATES, FileText
from m3graph.service.guarded import CypherRows, GuardLimits, read_cypher
from m3graph.service.memory import ControllerFactory
from m3graph.service.output import plain
from m3graph.service.results import JobStatus
from m3graph.service.tool_results import ChatIngested, GraphSchema, Remembered
from m3graph.settings import Settings
from m3graph.storage import key_of, media_store

if TYPE_CHECKING:
    from m3graph.graphdb.store import MemoryGraph

MAX_MEDIA_BYTES = 4 << 20  # a crop is ~10 kB, a snippet of a long turn ~1 MB

REMEMBER_SOURCE = notes.NOTES_SOURCE
REMEMBER_SPEAKER = notes.AGENT


class McpService(MemoryService):
    """The service, plus the agent-only tools; `files_roots` bound what the file-reading writes may open."""

    def __init__(self, settings: Settings, graph: MemoryGraph, *, files_roots: Sequence[Path] = (),
                 use_celery: bool = False, cypher_timeout_s: float = 10.0, cypher_max_rows: int = 1000,
                 embedder_factory: Any = None, controller_factory: ControllerFactory | None = None) -> None:
        super().__init__(settings, graph, embedder_factory=embedder_factory, controller_factory=controller_factory,
                         ingest_run=ingest_runner(settings, use_celery))
        self.files_roots = [p.resolve() for p in (files_roots or [Path.cwd()])]
        self.cypher_timeout_s = cypher_timeout_s
        self.cypher_max_rows = cypher_max_rows
        self.asks = AskJobs(self.ask)  # `ask` as a job the tool waits on, then hands out to poll
        self.ask_wait_s = ASK_WAIT_S

    def graph_schema(self) -> GraphSchema:
        """m3graph's schema model, then what the server reports (`evidence.schema_state`)."""
        return schema.describe(self.evidence.schema_state())

    def read_cypher(self, query: str, params: dict[str, Any] | None = None) -> CypherRows:
        return read_cypher(self.graph, query, params,
                           GuardLimits(timeout_s=self.cypher_timeout_s, max_rows=self.cypher_max_rows))

    def fetch_media(self, video: str, clip: int, uri: str) -> tuple[bytes, str]:
        """A face crop or voice snippet the graph references from that clip, read from the media store (the data
        directory or a bucket: m3graph.storage); returns (bytes, "image" or "audio"). As in the explorer, nothing
        the graph does not reference from that clip is read, and clip cuts (video) are not sent to agents."""
        check_source_id(video)
        key = key_of(uri, self.settings.data_dir)
        if key is None or not self.evidence.media_referenced(uri, video, clip):
            raise NotFoundError(f"{uri[:200]}: not a media file of clip {video}#{clip}")
        kind = {".jpg": "image", ".jpeg": "image", ".png": "image", ".wav": "audio"}.get(Path(key).suffix.lower())
        if kind is None:
            raise InvalidInputError(f"{key}: only face crops and voice snippets are sent (open clips in the explorer)")
        store = media_store(self.settings)
        size = store.size(key)
        if size is None:
            raise NotFoundError(f"{key}: referenced by the graph but not in the media store")
        if size > MAX_MEDIA_BYTES:
            raise InvalidInputError(f"{key}: {size} bytes, over the {MAX_MEDIA_BYTES}-byte limit for one answer")
        return store.get_bytes(key), kind

    def file_text(self, sha256: str, limit: int = MAX_SURROGATES) -> FileText:
        """A shared file's reference, where it was shared, and its surrogate text (every memory that DESCRIBES
        it, in order, at most `limit`), people as <character_K>. Only files the graph holds, by their key: an
        agent never reads bytes or a path through this server."""
        return self.evidence.file_text(sha256, limit)

    # -- writes --------------------------------------------------------------------------------------------
    def _local_file(self, raw: str, directory: bool = False) -> Path:
        """A path the server may read: an existing file (or directory) under one of its files roots."""
        path = Path(raw).expanduser()
        if not path.is_absolute():
            path = self.files_roots[0] / path
        path = path.resolve()
        if not any(path.is_relative_to(root) for root in self.files_roots):
            roots = ", ".join(str(r) for r in self.files_roots)
            raise InvalidInputError(f"{raw}: outside the directories this server may read ({roots})")
        if directory and not path.is_dir():
            raise NotFoundError(f"{raw}: no such directory")
        if not directory and not path.is_file():
            raise NotFoundError(f"{raw}: no such file")
        return path

    def _ingest_conversation(self, conv: Any, files_root: Path | None = None) -> ChatIngested:
        from m3graph.ingest.chat.ingest import ingest_conversation

        summary = ingest_conversation(self.graph, conv, self.embedder, files_root=files_root)
        return ChatIngested(**plain(summary))

    def remember(self, text: str, source: str | None = None, speaker: str | None = None) -> Remembered:
        """One note as a one-turn session of a notes source, through the chat write path (speaker entity, memory,
        embedding); never into a video's or conversation's timeline, never as one of their people
        (`m3graph.service.notes`: the source, the agent speaker and the marks)."""
        from m3graph.ingest.chat.generic_json import session_digest
        from m3graph.ingest.chat.ingest import speaker_key
        from m3graph.ingest.chat.model import Conversation, Session, Turn

        line = notes.note_text(text)
        name = notes.agent_speaker(speaker)
        target = check_source_id(source or notes.NOTES_SOURCE)
        if speaker_key(self.settings.chat.same_speakers, target, name) != f"{target}|{name}":
            raise InvalidInputError(f"chat.same_speakers maps the note's speaker {name!r} to another speaker; an "
                                    "agent's note speaks only for itself")
        source = notes.claim_notes_source(self.graph, target)
        now = datetime.now(UTC)
        turn = Turn(turn_id=f"note:{uuid.uuid4().hex[:12]}", speaker=name, text=line)
        session = Session(index=0, started_at=now, turns=(turn,), key=session_digest((turn,), now))
        conv = Conversation(source_id=source, sessions=(session,), speakers=(name,), path=None)
        try:
            summary = self._ingest_conversation(conv)
        except BaseException:
            notes.release_notes_source(self.graph, source)
            raise
        clips = summary.sessions_written
        for clip in clips:
            notes.mark_note(self.graph, source, clip)
        first = clips[0] if clips else None
        return Remembered(remembered=line, source=source, speaker=name, clip=first, turn_id=turn.turn_id,
                          clip_key=f"{source}#{first}" if first is not None else None, summary=summary)

    def ingest_chat(self, path: str, source_id: str | None = None) -> ChatIngested:
        from m3graph.ingest.chat.formats import load_conversation
        from m3graph.ingest.chat.parsing import ReadLimits

        if source_id is not None:
            check_source_id(source_id)
        local = self._local_file(path)
        conv, _ = load_conversation(local, "auto", source_id, ReadLimits.of(self.settings.chat))
        check_source_id(conv.source_id)
        # Shared files are read under the files root holding the conversation, like the CLI's --files-root.
        root = next(r for r in self.files_roots if local.is_relative_to(r))
        return self._ingest_conversation(conv, root)

    def ingest(self, paths: Sequence[str], live: bool = False, source_id: str | None = None) -> JobStatus:
        if not paths:
            raise InvalidInputError("give at least one path")
        if live and len(paths) != 1:
            raise InvalidInputError("live ingestion watches one directory: give exactly one path")
        if source_id is not None:
            check_source_id(source_id)
            if len(paths) > 1:
                raise InvalidInputError("video_id names one video: give one path")
        files = [self._local_file(p, directory=live) for p in paths]
        return self.jobs.start(files, live, source_id).status()
