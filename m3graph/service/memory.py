"""The application service: every operation a front end offers, over one open store, one request each.

Why one class: the CLI, the MCP server, the explorer and the demo are only ways of building a request and
showing a result; what a search, a clip read, a vote or a delete *does* is decided here, once. Inputs arrive
already validated (`m3graph.service.requests`); what only the graph can tell (an unknown video where an
operation needs one) is refused here with `NotFoundError`. Results are typed (`m3graph.service.results`): a
front end renders their fields, or sends `to_json()` (plain JSON values, never an embedding); the same search
result reaches the CLI, the MCP tools and the explorer.

What this package does not import, so that the controller can import its search (tests/test_layers.py): the
reasoning package (`ask` gets its controller from `controller_factory`, injected by the front end) and the
ingestion package (ingestion jobs run the `IngestRun` the front end injects).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from m3graph.errors import InvalidInputError
from m3graph.fact_versions import thing_key
from m3graph.graphdb import facts
from m3graph.graphdb.deletion import StoredCopies
from m3graph.graphdb.files import memory_files
from m3graph.graphdb.passages import rank_in_results
from m3graph.graphdb.speech import SPEAKER_LINE
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.tags import is_equivalence, parse_tags, render_characters
from m3graph.graphdb.types import ClipResult, RenderedMemory, clip_key
from m3graph.service import reads
from m3graph.service.citations import cite
from m3graph.service.evidence import Evidence
from m3graph.service.jobs import IngestJobs, IngestRun
from m3graph.service.lookup import Lookup, char_id_of
from m3graph.service.output import plain
from m3graph.service.requests import (
    AskRequest,
    CharacterRequest,
    CorrectFactRequest,
    DeleteRequest,
    FactsAboutRequest,
    FetchClipRequest,
    HistoryRequest,
    IngestStatusRequest,
    ListVideosRequest,
    SearchRequest,
    StatsRequest,
    TimelineRequest,
    UndoVoteRequest,
    VoteRequest,
)
from m3graph.service.results import (
    AskResult,
    Candidate,
    CharacterResult,
    ClipHit,
    ClipSpan,
    ClipView,
    Deleted,
    Episode,
    FaceInClip,
    FactCorrection,
    FactLine,
    Facts,
    FactSlot,
    FactVersion,
    FileRef,
    History,
    JobList,
    JobStatus,
    ManualMark,
    MemoryHit,
    SameAs,
    SearchResult,
    Snippet,
    Stats,
    Timeline,
    TimelineClip,
    UndoVoteResult,
    VideoList,
    VideoSummary,
    VoiceInClip,
    VoteResult,
)
from m3graph.service.search import characters_in, run_search, scoped_characters
from m3graph.settings import Settings
from m3graph.statements import normalise_attribute, normalise_name

MAX_CHARACTER_MEMORIES = 200


class Controller(Protocol):
    def answer(self, question: str, videos: list[str] | None, before_clip: int | None) -> Any: ...


# (text embedder, rounds or None for the configured H, controller dialect or None) -> a controller
ControllerFactory = Callable[[Any, int | None, str | None], Controller]


def _speaker(text: str) -> str | None:
    """The name of the speaker of a conversation turn ("Nora <speaker_5>: ..."), None for any other memory."""
    said = SPEAKER_LINE.match(text)
    return said.group("name").strip() if said else None


def _clip_label(key: str) -> str:
    return f"CLIP_{key.rsplit('#', 1)[1]}"


class MemoryService:
    """Search, read, ask, vote and delete over one open `MemoryGraph`."""

    def __init__(self, settings: Settings, graph: MemoryGraph, *,
                 embedder_factory: Callable[[], Any] | None = None,
                 controller_factory: ControllerFactory | None = None,
                 ingest_run: IngestRun | None = None) -> None:
        self.settings = settings
        self.graph = graph
        self.jobs = IngestJobs(ingest_run)
        self.evidence = Evidence(graph, settings)  # the pages' evidence reads (crops, neighbours, files, ...)
        self.lookup = Lookup(graph)  # sources and people by name or id, refused with the closest known names
        self._embedder_factory = embedder_factory
        self._controller_factory = controller_factory
        self._embedder: Any = None
        self._controllers: dict[tuple[int | None, str | None], Controller] = {}
        self._embed_lock = threading.Lock()  # one model, loaded once, one encode at a time
        self._last_query: tuple[str, list[float]] = ("", [])  # a search embeds its query once, not per step
        self._ask_lock = threading.Lock()  # a local chat model answers one question at a time

    # -- lazily loaded models ------------------------------------------------------------------------------
    @property
    def embedder(self) -> Any:
        with self._embed_lock:
            if self._embedder is None:
                if self._embedder_factory is not None:
                    self._embedder = self._embedder_factory()
                else:
                    from m3graph.embedding import text_embedder

                    self._embedder = text_embedder(self.settings)
            return self._embedder

    def embed(self, text: str) -> list[float]:
        """A search query's vector (the model's query side: bge's instruction prefix; memories never take it)."""
        from m3graph.embedding import query_embed

        embed_query = query_embed(self.embedder)
        with self._embed_lock:
            if self._last_query[0] != text or not self._last_query[1]:
                self._last_query = (text, [float(x) for x in embed_query([text])[0]])
            return list(self._last_query[1])

    # -- checks only the graph can make ----------------------------------------------------------------------
    def require_videos(self, videos: Sequence[str] | None) -> None:
        """NotFoundError naming the first id that is not a source in the graph (with the closest known ids)."""
        self.lookup.require_sources(videos)

    # -- rendering -----------------------------------------------------------------------------------------
    def _render_texts(self, texts: Sequence[str]) -> list[str]:
        """Raw `<face_N>`/`<voice_N>`/`<speaker_N>` tags as `<character_K>`, from the IS structure."""
        return self.evidence.render_texts(texts)

    @staticmethod
    def clip_hit(result: ClipResult, with_scores: bool = True,
                 files: dict[str, list[dict[str, Any]]] | None = None) -> ClipHit:
        """A clip as every front end shows it: no `Equivalence:` lines, a memory that cites a shared file with
        its reference (`files`: memory id -> [{sha256, name, kind, shared_at}]); scores only `with_scores`."""
        files = files or {}
        memories = [MemoryHit(kind=m.kind, text=m.text, memory_id=m.memory_id,
                              score=m.score if with_scores else None,
                              superseded=m.superseded if m.current is False and m.superseded else None,
                              files=[FileRef(**plain(f)) for f in files[m.memory_id]] if m.memory_id in files else None,
                              slot=m.slot, current=m.current, speaker=_speaker(m.raw_text),
                              clip=clip_key(result.source_id, result.clip_index))
                    for m in result.memories if not is_equivalence(m.raw_text)]
        return ClipHit(source_id=result.source_id, clip_index=result.clip_index, start_s=result.start_s,
                       end_s=result.end_s, started_at=result.started_at, memories=memories,
                       score=result.score if with_scores else None, rank=result.rank if with_scores else None)

    def _cited_files(self, results: Sequence[ClipResult]) -> dict[str, list[dict[str, Any]]]:
        """The shared files the results' memories cite (one read for all of them)."""
        return memory_files(self.graph.ex, [m.memory_id for r in results for m in r.memories])

    # -- search --------------------------------------------------------------------------------------------
    def search_results(self, request: SearchRequest) -> list[ClipResult]:
        """The ranking itself (`m3graph.service.search.run_search`), before it is shown: what the evaluation
        runners score. Front ends call `search`."""
        return run_search(self.graph.search, self.embed, request)

    def search(self, request: SearchRequest) -> SearchResult:
        """THE search every front end shows: hybrid, floored, scoped by `<character_K>` tags and `characters`;
        clips best first, each with its memories (`Equivalence:` lines left out, a clip with nothing else
        dropped; a reached file's best passages, not all) and the files they cite. Unknown ids: `NotFoundError`."""
        self.require_videos(request.videos)
        self.lookup.require_characters(scoped_characters(request))
        results = self.search_results(request)
        results = rank_in_results(self.graph.ex, self.graph.settings, results, self.embed(request.query),
                                  request.query, request.videos, request.before_clip).results
        files = self._cited_files(results)
        clips = [c for c in (self.clip_hit(r, files=files) for r in results) if c.memories]
        return SearchResult(query=request.query, mode=request.mode,
                            videos=list(request.videos) if request.videos else None,
                            before_clip=request.before_clip, characters=scoped_characters(request),
                            clips=cite(self.graph, clips))

    # -- reads ---------------------------------------------------------------------------------------------
    def list_videos(self, request: ListVideosRequest | None = None) -> VideoList:
        return VideoList(videos=[VideoSummary(**plain(r)) for r in reads.videos(self.graph)])

    def stats(self, request: StatsRequest) -> Stats:
        """Node and relationship counts, of one source when `video` is given (it must exist)."""
        if request.video is not None:
            return Stats(video=request.video, counts=self.lookup.source_counts(request.video))
        return Stats(video=None, counts=self.graph.counts(None))

    def video_timeline(self, request: TimelineRequest) -> Timeline:
        self.require_videos([request.video])
        rows = reads.timeline(self.graph, request.video)
        summaries = self._render_texts([r["first"][0] if r["first"] else "" for r in rows])
        clips = [TimelineClip(clip=r["clip_index"], start_s=r["start_s"], end_s=r["end_s"],
                              started_at=plain(r["started_at"]), state=r["state"], reason=r["reason"],
                              memories=r["memories"], faces=r["faces"], voices=r["voices"], speakers=r["speakers"],
                              summary=s or None)
                 for r, s in zip(rows, summaries, strict=True)]
        return Timeline(video=request.video, clips=clips)

    def fetch_clip(self, request: FetchClipRequest) -> ClipView:
        video, clip = request.video, request.clip
        self.require_videos([video])
        header = reads.clip(self.graph, video, clip)
        found = self.graph.search.fetch_clip(video, clip, before=request.before, after=request.after)
        files = self._cited_files(found)
        return ClipView(video=video, clip=clip, state=header["state"], reason=header["reason"], uri=header["uri"],
                        faces=[FaceInClip(face=f, character=c) for f, c in header["faces"]],
                        voices=[VoiceInClip(voice=v, character=c) for v, c in header["voices"]],
                        clips=cite(self.graph, [self.clip_hit(r, with_scores=False, files=files) for r in found]))

    def character(self, request: CharacterRequest) -> CharacterResult:
        char_id = request.char_id
        candidates: list[Candidate] = []
        self.lookup.require_characters([char_id] if char_id is not None else [])
        if char_id is None:  # a name: an id spelled out, or the one person going by it, else the memories' best
            found, by_name = self.lookup.candidates(str(request.name), request.videos)
            if by_name or not found or char_id_of(str(request.name)) is not None:
                char_id = self.lookup.resolve(str(request.name), request.videos)  # raises naming the candidates
            else:
                char_id = found[0][0]
                candidates = [Candidate(char_id=c, mentions=n)
                              for c, n in self.graph.search.characters_named(str(request.name), request.videos)]
        view = reads.character(self.graph, int(char_id), memory_limit=MAX_CHARACTER_MEMORIES)
        appearances: dict[str, dict[str, int]] = {}
        for m in view.memories:
            span = appearances.setdefault(m["source_id"], {"first_clip": m["clip_index"], "last_clip": m["clip_index"]})
            span["first_clip"] = min(span["first_clip"], m["clip_index"])
            span["last_clip"] = max(span["last_clip"], m["clip_index"])
        return CharacterResult(
            char_id=view.char_id, name=facts.character_names(self.graph.ex, [view.char_id]).get(
                view.char_id, view.name), aliases=view.aliases,
            faces=[m["entity_id"] for m in view.members if m["kind"] == "face"],
            voices=[m["entity_id"] for m in view.members if m["kind"] == "voice"],
            speakers=[m["entity_id"] for m in view.members if m["kind"] == "speaker"],
            same_as=[SameAs(face=s["face"], voice=s["voice"], votes=s["votes"], evidence_clips=s["evidence"],
                            face_character=s["face_char"], voice_character=s["voice_char"]) for s in view.same_as],
            manual_votes=self.graph.vote_history(char_id=view.char_id),
            facts=[m["text"] for m in view.memories if m["kind"] == "semantic" and not is_equivalence(m["text"])],
            episodes=[Episode(video=m["source_id"], clip=m["clip_index"], text=m["text"], memory_id=m["memory_id"])
                      for m in view.memories if m["kind"] == "episodic"][:50],
            appearances={v: ClipSpan(**span) for v, span in appearances.items()},
            face_crops={str(k): [c["uri"] for c in v] for k, v in view.crops.items()},
            voice_snippets={str(k): [Snippet(uri=s["uri"], text=s["text"]) for s in v]
                            for k, v in view.snippets.items()},
            resolved_from_alias=char_id if view.char_id != char_id else None,
            other_candidates=candidates[1:] if len(candidates) > 1 else None)

    # -- facts that change ------------------------------------------------------------------------------
    def _subject_keys(self, video: str, subject: str) -> list[str]:
        """The slot subjects a name stands for: the name itself, and where it is a person (`<character_K>` or a
        name the memories give a character) the face, voice and speaker tags that person's facts are about."""
        keys = [normalise_name(subject)]
        chars = characters_in(subject)
        if not chars:
            chars = [c for c, _ in self.graph.search.characters_named(subject, [video])[:1]]
        for entity in self.graph.search.entities_of(chars):
            keys += [normalise_name(f"<{kind}_{entity}>") for kind in ("face", "voice", "speaker")]
        keys += [normalise_name(n) for n in facts.character_names(self.graph.ex, chars).values()] if chars else []
        return list(dict.fromkeys(keys))

    def _people(self, subjects: Sequence[str]) -> dict[str, str]:
        """Subjects as people read them: "<face_4>" -> "Mia (<character_4>)" (its name fact), else the text."""
        tags = {s: parse_tags(s) for s in subjects}
        ids = sorted({n for found in tags.values() for _, n in found})
        chars = self.graph.characters_of(ids) if ids else {}
        names = facts.character_names(self.graph.ex, list(chars.values())) if chars else {}
        out = {}
        for subject, found in tags.items():
            shown = render_characters(subject, {(k, n): chars[n] for k, n in found if n in chars})
            char_ids = [chars[n] for _, n in found if n in chars]
            name = names.get(char_ids[0]) if len(char_ids) == 1 else None
            out[subject] = f"{name} ({shown})" if name else shown
        return out

    def history(self, request: HistoryRequest) -> History:
        """One subject's facts in one source, slot by slot, every version oldest first with when it held."""
        self.require_videos([request.video])
        attribute = normalise_attribute(request.attribute) if request.attribute else None
        rows = [r for key in self._subject_keys(request.video, request.subject)
                for r in facts.history(self.graph.ex, request.video, key, attribute, request.k)][:request.k]
        slots: dict[str, tuple[dict[str, Any], list[FactVersion]]] = {}
        subjects = self._people(sorted({r["slot_subject"] for r in rows}))
        for r in rows:
            head, versions = slots.setdefault(r["slot_key"], (
                {"slot": r["slot_key"], "subject": subjects[r["slot_subject"]], "attribute": r["slot_attribute"]},
                []))
            versions.append(FactVersion(
                memory_id=r["memory_id"], value=r["slot_value"], negated=bool(r["negated"]),
                current=bool(r["current"]), said_in=[_clip_label(k) for k in r["support_clips"] or []],
                superseded=r["superseded_note"] or None, contradicts=r["contradicts"] or None,
                manual=ManualMark(state=r["manual_state"], note=r["manual_note"], via=r["manual_via"],
                                  at=plain(r["manual_at"])) if r["manual_state"] else None))
        shown = [FactSlot(**head, versions=versions) for head, versions in slots.values()]
        return History(video=request.video, subject=request.subject, slots=shown,
                       note=self.lookup.no_facts_reason(request.video, request.subject, found=bool(shown)))

    def facts_about_results(self, request: FactsAboutRequest) -> list[RenderedMemory]:
        keys = [thing_key(request.video, normalise_name(s)) for s in request.subjects]
        return facts.facts_about(self.graph.ex, request.video, keys, request.all_versions, request.k)

    def facts_about(self, request: FactsAboutRequest) -> Facts:
        """The facts whose subject is one of these names (current ones unless all_versions)."""
        return Facts(video=request.video, facts=[
            FactLine(text=m.text, value=m.value, clip=m.clip_index, memory_id=m.memory_id,
                     superseded=m.superseded if m.current is False and m.superseded else None)
            for m in self.facts_about_results(request)])

    # -- ask -----------------------------------------------------------------------------------------------
    def answer(self, request: AskRequest) -> Any:
        """The controller's trace for the question (the object; `ask` gives it as plain JSON)."""
        self.require_videos(request.videos)
        if self._controller_factory is None:
            raise InvalidInputError("this front end answers no questions (no controller was configured)")
        key = (request.rounds, request.mode)
        with self._ask_lock:
            controller = self._controllers.get(key)
            if controller is None:
                controller = self._controllers[key] = self._controller_factory(self.embedder, *key)
            return controller.answer(request.question, list(request.videos) if request.videos else None,
                                     request.before_clip)

    def ask(self, request: AskRequest) -> AskResult:
        return AskResult(**plain(self.answer(request).to_dict()))

    # -- writes --------------------------------------------------------------------------------------------
    def vote(self, request: VoteRequest, source_note: str = "manual") -> VoteResult:
        a, b = request.a, request.b
        record = self.graph.vote_identity(a, b, request.verdict, note=request.note or source_note, source="manual")
        chars = self.graph.characters_of([a, b])
        return VoteResult(vote=record, characters={str(a): chars.get(a), str(b): chars.get(b)})

    def correct_fact(self, request: CorrectFactRequest, via: str = "manual") -> FactCorrection:
        """Marks one fact superseded, restores it, or clears the mark (`m3graph.graphdb.facts.correct_fact`)."""
        return FactCorrection(**facts.correct_fact(self.graph.ex, request.memory_id, request.state, request.note,
                                                   via))

    def undo_vote(self, request: UndoVoteRequest) -> UndoVoteResult:
        undone = self.graph.undo_vote(request.vote_id)
        return UndoVoteResult(vote_id=request.vote_id, undone=undone,
                              note=None if undone else "the vote was already undone")

    def delete(self, request: DeleteRequest) -> Deleted:
        """The graph part, then every stored copy it named; a copy that was missing raises `MissingCopiesError`
        after the rest is done (`deletion.StoredCopies`), so no front end reports a clean delete that left media."""
        ex, settings = self.graph.ex, self.graph.settings
        if request.kind == "clip":
            assert request.video is not None and request.clip is not None  # the request checked it
            copies = StoredCopies.of_clips(ex, settings, request.video, request.clip)
            self.graph.delete_clip(request.video, request.clip)
            copies.settle()
            return Deleted(deleted="clip", video=request.video, clip=request.clip)
        if request.kind == "video":
            assert request.video is not None
            copies = StoredCopies.of_clips(ex, settings, request.video)
            n = self.graph.delete_video(request.video)
            copies.settle()
            return Deleted(deleted="video", video=request.video, clips=n)
        assert request.char_id is not None
        copies = StoredCopies.of_character(ex, settings, request.char_id)
        summary = self.graph.delete_character(request.char_id)
        copies.settle()
        return Deleted(deleted="character", char_id=request.char_id, summary=summary)

    # -- ingestion jobs ------------------------------------------------------------------------------------
    def ingest_status(self, request: IngestStatusRequest) -> JobStatus | JobList:
        if request.job_id:
            return self.jobs.get(request.job_id).status()
        return JobList(jobs=[j.status() for j in self.jobs.all()])


__all__ = ["MAX_CHARACTER_MEMORIES", "Controller", "ControllerFactory", "MemoryService"]
