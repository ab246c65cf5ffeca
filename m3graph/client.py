"""m3graph as a Python library: `from m3graph import Memory`.

Why a front end of its own: agents are written in Python, and a search from Python used to need `Settings`,
`MemoryGraph.connect`, `MemoryService` and a `SearchRequest`, found by reading the source. `Memory` opens the
store (the embedded local Neo4j, started when needed, or the Neo4j at `uri`), writes through the same ingestion
paths as the CLI and the MCP tools, and reads through the same application service, so it returns the same typed
results (`m3graph.service.results`) that the CLI prints, the MCP tools send and the explorer shows, with the ids a
caller needs to cite or correct them.

    with Memory.open() as memory:
        memory.add_turns("team-chat", [("Nora", "I moved to Porto last week.")])
        for hit in memory.search("Where does Nora live?", source="team-chat").hits:
            print(hit.speaker, hit.text, hit.memory_id)

Every input is validated where it enters (the service's requests), and every refusal is an `m3graph.errors`
exception (`InvalidInputError`, `NotFoundError`, ...), never a driver or pydantic traceback.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from pydantic import SecretStr

from m3graph.errors import InvalidInputError
from m3graph.service import (
    AskRequest,
    CharacterRequest,
    CorrectFactRequest,
    DeleteRequest,
    FactsAboutRequest,
    HistoryRequest,
    ListVideosRequest,
    MemoryService,
    SearchRequest,
)
from m3graph.settings import Settings, load_settings

if TYPE_CHECKING:
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.ingest.chat.ingest import ChatIngestSummary, SessionMemorizer
    from m3graph.ingest.chat.model import Conversation
    from m3graph.ingest.pipeline import ClipReport
    from m3graph.service.results import (
        AskResult,
        CharacterResult,
        Deleted,
        FactCorrection,
        Facts,
        History,
        SearchResult,
        VideoList,
    )

Turns = Iterable[tuple[str, str] | dict[str, str]]


class Memory:
    """One open memory: write conversations and videos into it, search it, ask it, correct it.

    Build it with `Memory.open(...)` and close it (or use it as a context manager): it holds a driver and, once
    used, the text model and the chat model.
    """

    def __init__(self, settings: Settings, graph: MemoryGraph, service: MemoryService) -> None:
        self.settings = settings
        self._graph = graph
        self.service = service

    # -- opening and closing --------------------------------------------------------------------------------
    @classmethod
    def open(cls, *, uri: str | None = None, user: str | None = None, password: str | None = None,
             database: str | None = None, settings: Settings | None = None) -> Memory:
        """Opens the memory.

        Args:
            uri: a Neo4j Bolt/neo4j URI; without one, the configured server is used (by default the embedded
                local Neo4j, built and started when needed, its store under the working directory's `.m3graph/`).
            user, password, database: the login and database on that server (default: the configured ones, from
                the environment or `m3graph.toml`; docs/configuration.md).
            settings: a complete `Settings` to start from (the keyword arguments override its fields).

        Returns:
            An open `Memory`; the schema is migrated on connect.

        Raises:
            ConfigError: a setting is invalid or a local server cannot be built.
            ServerError: the server cannot be reached or refuses the login.
        """
        base = settings or load_settings()
        update: dict[str, Any] = {}
        if uri is not None:
            update["neo4j_uri"] = uri
        if user is not None:
            update["neo4j_user"] = user
        if password is not None:
            update["neo4j_password"] = SecretStr(password)
        if database is not None:
            update["neo4j_database"] = database
        resolved = Settings.model_validate({**base.model_dump(), **update}) if update else base
        from m3graph.cli.session import make_service, open_graph

        graph = open_graph(resolved)
        try:
            return cls(resolved, graph, make_service(resolved, graph))
        except BaseException:
            graph.close()
            raise

    def close(self) -> None:
        """Closes the driver (the local server keeps running for the next user; `m3graph db stop` stops it)."""
        self._graph.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------------------------------
    def add_turns(self, source: str, turns: Turns, *, when: datetime | None = None) -> ChatIngestSummary:
        """Appends one session of a conversation: the turns become episodic memories, each speaker a person.

        Args:
            source: the conversation's id (letters, digits, `.`, `_`, `-`); a new id starts a new conversation.
            turns: `(speaker, text)` pairs or `{"speaker": ..., "text": ...}` dicts, in the order said.
            when: when the session took place (default: now, UTC); questions about time are answered from it.

        Returns:
            The ingestion summary: the clip index of the new session (`sessions_written`), counts of turns,
            memories and new speakers. The same turns at the same time added again are recognised and skipped.

        Raises:
            InvalidInputError: an empty session, an empty speaker or text, or a bad source id.
        """
        return self._ingest(conversation_of_turns(source, turns, when))

    def add_facts(self, source: str, facts: Iterable[str]) -> ChatIngestSummary:
        """Appends statements of fact, newest last ("Nora lives in Lisbon.", later "Nora moved to Porto.").

        Each becomes one semantic memory; a statement the rules read as a slot (subject, attribute, value:
        docs/facts.md) retires the older value of that slot, so `history` shows every version and search and
        `ask` see the current one. The same facts added again are recognised and skipped.

        Raises:
            InvalidInputError: no facts, or an empty one.
        """
        from m3graph.ingest.chat.facts_list import SPEAKER, FactsMemorizer

        # Undated, like a facts list: order alone says which statement is newer.
        conv = conversation_of_turns(source, [(SPEAKER, fact) for fact in facts], turn_prefix="fact", dated=False)
        return self._ingest(conv, memorizer=FactsMemorizer())

    def add_conversation(self, path: str | Path, *, source: str | None = None,
                         files_root: str | Path | None = None) -> ChatIngestSummary:
        """Ingests a conversation or transcript file (LoCoMo or generic JSON, SRT/WebVTT, "Speaker: text" lines,
        a numbered facts list) or a folder of session folders with the files they share (PDF, DOCX, images, ...).

        Args:
            path: the file or folder; it is parsed and validated before anything is written.
            source: store it under this id (default: the file's own id or name).
            files_root: where the files its turns share may be read from (default: the conversation's folder).

        Returns:
            The ingestion summary; sessions already stored are skipped, so adding a grown file appends.

        Raises:
            ChatFormatError (an InvalidInputError): the file is malformed (its line is named); nothing is written.
        """
        from m3graph.graphdb.types import check_source_id
        from m3graph.ingest.chat.facts_list import FactsMemorizer
        from m3graph.ingest.chat.formats import detect_format, load_conversation
        from m3graph.ingest.chat.parsing import ReadLimits

        where = Path(path)
        limits = ReadLimits.of(self.settings.chat)
        conv, _ = load_conversation(where, "auto", source, limits)
        check_source_id(conv.source_id)
        root = Path(files_root) if files_root is not None else (where if where.is_dir() else where.parent)
        facts = detect_format(where, limits) == "facts"  # a facts list: each fact one semantic memory, no model
        return self._ingest(conv, root, FactsMemorizer() if facts else None)

    def add_video(self, path: str | Path, *, source: str | None = None) -> list[ClipReport]:
        """Ingests a video in this process: 30-second clips, faces and voices resolved to persistent people,
        memories written by the configured memorizer. Slow (perception models on the CPU): seconds per clip.

        Args:
            path: the video file.
            source: its id (default: the file name without its extension).

        Returns:
            One `ClipReport` per clip: its index, the face and voice entities it resolved, how many were new,
            its memories, and the memorize error of a clip that ended memorize_failed.
        """
        from m3graph.ingest.pipeline import ingest_video_inprocess
        from m3graph.reasoning.memorize import make_memorizer

        video = Path(path)
        memorizer = make_memorizer(self.settings)
        reports = ingest_video_inprocess(self._graph, self.service.embedder, video, source or video.stem,
                                         memorizer)
        return list(reports)

    def _ingest(self, conv: Conversation, files_root: Path | None = None,
                memorizer: SessionMemorizer | None = None) -> ChatIngestSummary:
        from m3graph.ingest.chat.ingest import ingest_conversation

        return ingest_conversation(self._graph, conv, self.service.embedder, memorizer, files_root=files_root)

    # -- reading ------------------------------------------------------------------------------------------------
    def search(self, query: str, *, source: str | None = None, sources: Sequence[str] = (), k: int | None = None,
               mode: Literal["clip", "node"] = "node", characters: Sequence[int] = (),
               as_of: str | None = None) -> SearchResult:
        """Searches memory as the controller does (hybrid: the text's meaning and its words).

        Args:
            query: what to look for; a `<character_K>` tag in it scopes the search to that person.
            source, sources: the conversations or videos to search (default: all).
            k: how many clips (mode "clip") or memories (mode "node") to return.
            mode: "node" ranks memories (default: the lines that answer), "clip" whole clips.
            characters: only memories about these people (their char ids).
            as_of: facts as they held at a date ("2025-04-30") or clip ("SOURCE#N").

        Returns:
            The result: `.clips` best first, each with its memories; `.hits` the memories alone, best first.

        Raises:
            InvalidInputError: a bad bound; NotFoundError: an unknown source.
        """
        request = SearchRequest(query=query, videos=_sources(source, sources), k=k, mode=mode,
                                characters=list(characters), as_of=as_of)
        return self.service.search(request)

    def ask(self, question: str, *, source: str | None = None, sources: Sequence[str] = (),
            rounds: int | None = None) -> AskResult:
        """Answers a question from memory with the H-round controller (search, read, answer).

        Args:
            question: the question.
            source, sources: the conversations or videos to answer from (default: all).
            rounds: the most search rounds (default: the configured H).

        Returns:
            `.answer`, and the trace of every round with the evidence shown.
        """
        request = AskRequest(question=question, videos=_sources(source, sources), rounds=rounds)
        return self.service.ask(request)

    def history(self, source: str, subject: str) -> History:
        """Every version of every fact about `subject` (a name or a tag) in `source`, newest first per slot."""
        return self.service.history(HistoryRequest(video=source, subject=subject))

    def facts_about(self, source: str, *subjects: str) -> Facts:
        """The current facts in `source` about named things or people ("Nora", "Porto")."""
        return self.service.facts_about(FactsAboutRequest(video=source, subjects=subjects))

    def character(self, char_id: int | None = None, *, name: str | None = None, source: str | None = None,
                  sources: Sequence[str] = ()) -> CharacterResult:
        """One person: their faces, voices, speakers, facts and episodes, by char id or by name (give one).

        Raises:
            NotFoundError: no such person (a name is looked up in the facts that name people).
        """
        return self.service.character(CharacterRequest(char_id=char_id, name=name,
                                                       videos=_sources(source, sources)))

    def people(self, source: str) -> list[CharacterResult]:
        """Everyone seen, heard or speaking in `source` (faces, voices, conversation speakers), one result each.

        Raises:
            NotFoundError: no such source.
        """
        self.service.evidence.require_source(source)
        ids = sorted({e.char_id for e in self.service.evidence.source_entities(source) if e.char_id is not None})
        return [self.character(i, source=source) for i in ids]

    def sources(self) -> VideoList:
        """Every conversation and video in memory, with its clip and memory counts."""
        return self.service.list_videos(ListVideosRequest())

    # -- correcting and deleting ----------------------------------------------------------------------------
    def correct_fact(self, memory_id: str, state: Literal["superseded", "current", "clear"] = "superseded",
                     note: str | None = None) -> FactCorrection:
        """Corrects one version of a fact, by the `memory_id` a search or history returned: "superseded" (it does
        not hold; the version it displaced holds again), "current" (it holds, whatever newer value comes) or
        "clear" (back to what the sources say)."""
        return self.service.correct_fact(CorrectFactRequest(memory_id=memory_id, state=state, note=note))

    def delete_source(self, source: str) -> Deleted:
        """Deletes a conversation or video with everything derived from it (memories, stored media)."""
        return self.service.delete(DeleteRequest(kind="video", video=source))


def conversation_of_turns(source: str, turns: Turns, when: datetime | None = None, turn_prefix: str = "turn",
                          dated: bool = True) -> Conversation:
    """One new session of `source` from (speaker, text) pairs, taking place `when` (default now; no time at all
    when not `dated`): what `add_turns` and `add_facts` write."""
    from m3graph.graphdb.types import check_source_id
    from m3graph.ingest.chat.generic_json import session_digest
    from m3graph.ingest.chat.model import Conversation, Session, Turn

    check_source_id(source)
    started = None if not dated else datetime.now(UTC) if when is None else when if when.tzinfo else \
        when.replace(tzinfo=UTC)
    built: list[Turn] = []
    for item in turns:
        speaker, text = (item["speaker"], item["text"]) if isinstance(item, dict) else item
        speaker, text = " ".join(str(speaker).split()), " ".join(str(text).split())
        if not speaker or not text:
            raise InvalidInputError(f"turn {len(built) + 1}: a turn needs a speaker and some text")
        built.append(Turn(turn_id=f"{turn_prefix}:{uuid.uuid4().hex[:12]}", speaker=speaker, text=text))
    if not built:
        raise InvalidInputError("no turns to add")
    session = Session(index=0, started_at=started, turns=tuple(built), key=session_digest(tuple(built), started))
    speakers = tuple(dict.fromkeys(t.speaker for t in built))
    return Conversation(source_id=source, sessions=(session,), speakers=speakers, path=None)


def _sources(source: str | None, sources: Sequence[str]) -> list[str] | None:
    chosen = ([source] if source else []) + list(sources)
    return chosen or None


__all__ = ["Memory", "conversation_of_turns"]
