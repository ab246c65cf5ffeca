"""The MCP tools as plain Python over one open store: what each tool does, without the protocol.

Why separate from `server`: the work is the same whatever carries it (stdio, HTTP, a test calling it directly),
and every piece is an existing m3graph call. Reads are the explorer's named reads (`m3graph.explore.reads`) and
the controller's search; `ask` is the H-round controller; `read_cypher` is the guard; writes are chat ingestion
(`remember`, `ingest_chat`), the CLI's ingestion (`ingest`), manual identity votes and the store's deletions.
Every result goes through `output.plain`, so no tool ever returns an embedding.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.explore import reads
from m3graph.graphdb.guarded import run_guarded
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.tags import TAG, is_equivalence, parse_tags, render_characters
from m3graph.graphdb.types import ClipResult, check_video_id
from m3graph.mcp import schema
from m3graph.mcp.jobs import IngestJobs
from m3graph.mcp.output import plain
from m3graph.settings import Settings

MAX_NEIGHBOURS = 5  # fetch_clip: clips before/after the asked one
MAX_CHARACTER_MEMORIES = 200
REMEMBER_SOURCE = "agent-notes"
REMEMBER_SPEAKER = "agent"


class MemoryService:
    """One question-answering and (optionally) writing front over one open `MemoryGraph`."""

    def __init__(self, settings: Settings, graph: MemoryGraph, *, files_roots: Sequence[Path] = (),
                 use_celery: bool = False, cypher_timeout_s: float = 10.0, cypher_max_rows: int = 1000,
                 embedder_factory: Callable[[], Any] | None = None,
                 controller_factory: Callable[[], Any] | None = None) -> None:
        self.settings = settings
        self.graph = graph
        self.files_roots = [p.resolve() for p in (files_roots or [Path.cwd()])]
        self.cypher_timeout_s = cypher_timeout_s
        self.cypher_max_rows = cypher_max_rows
        self.jobs = IngestJobs(settings, use_celery)
        self._embedder_factory = embedder_factory
        self._controller_factory = controller_factory
        self._embedder: Any = None
        self._controller: Any = None
        self._embed_lock = threading.Lock()  # one model, loaded once, one encode at a time
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

    def _vector(self, text: str) -> list[float]:
        embedder = self.embedder
        with self._embed_lock:
            return [float(x) for x in embedder.embed([text])[0]]

    # -- rendering -----------------------------------------------------------------------------------------
    def _render_texts(self, texts: Sequence[str]) -> list[str]:
        """Raw `<face_N>`/`<voice_N>`/`<speaker_N>` tags as `<character_K>`, from the IS structure."""
        refs = {ref for t in texts for ref in parse_tags(t or "")}
        chars = self.graph.characters_of(sorted({eid for _, eid in refs})) if refs else {}
        mapping = {(kind, eid): chars[eid] for kind, eid in refs if eid in chars}
        return [render_characters(t or "", mapping) for t in texts]

    @staticmethod
    def _clip(result: ClipResult, with_scores: bool = True) -> dict[str, Any]:
        memories = [{"kind": m.kind, "text": m.text, **({"score": round(m.score, 4)} if with_scores and m.score
                                                          is not None else {})}
                    for m in result.memories if not is_equivalence(m.raw_text)]
        out: dict[str, Any] = {"video": result.video_id, "clip": result.clip_index, "start_s": result.start_s,
                               "end_s": result.end_s, "started_at": result.started_at, "memories": memories}
        if with_scores and result.score is not None:
            out["score"] = round(result.score, 4)
        return out

    # -- reads ---------------------------------------------------------------------------------------------
    def list_videos(self) -> dict[str, Any]:
        return plain({"videos": reads.videos(self.graph)})

    def video_timeline(self, video: str) -> dict[str, Any]:
        rows = reads.timeline(self.graph, video)
        summaries = self._render_texts([r["first"][0] if r["first"] else "" for r in rows])
        clips = [{"clip": r["clip_index"], "start_s": r["start_s"], "end_s": r["end_s"], "started_at": r["started_at"],
                  "state": r["state"], "reason": r["reason"], "memories": r["memories"], "faces": r["faces"],
                  "voices": r["voices"], "speakers": r["speakers"], "summary": s or None}
                 for r, s in zip(rows, summaries, strict=True)]
        return plain({"video": video, "clips": clips})

    def fetch_clip(self, video: str, clip: int, before: int = 0, after: int = 0) -> dict[str, Any]:
        if not (0 <= before <= MAX_NEIGHBOURS and 0 <= after <= MAX_NEIGHBOURS):
            raise InvalidInputError(f"before and after must be 0 to {MAX_NEIGHBOURS}, got {before} and {after}")
        header = reads.clip(self.graph, video, clip)
        found = self.graph.search.fetch_clip(video, clip, before=before, after=after)
        return plain({
            "video": video, "clip": clip, "state": header["state"], "reason": header["reason"], "uri": header["uri"],
            "faces": [{"face": f, "character": c} for f, c in header["faces"]],
            "voices": [{"voice": v, "character": c} for v, c in header["voices"]],
            "clips": [self._clip(r, with_scores=False) for r in found],
        })

    def search_memory(self, query: str, videos: Sequence[str] | None = None, before_clip: int | None = None,
                      mode: Literal["clip", "node"] = "clip", k: int | None = None) -> dict[str, Any]:
        """The controller's search_clip / search_node (hybrid, floored), with `<character_K>` scoping."""
        if not query.strip():
            raise InvalidInputError("the query is empty")
        chars = sorted({int(m.group(2)) for m in TAG.finditer(query) if m.group(1).lower() == "character"})
        text = TAG.sub(" ", query).strip() or None
        vector = self._vector(query)
        videos = list(videos) if videos else None
        search = self.graph.search
        if mode == "node":
            results = search.search_node(vector, videos, before_clip, k=k, characters=chars, text=text)
        else:
            results = search.search_clip(vector, videos, before_clip, k=k, characters=chars, text=text)
        clips = [c for c in (self._clip(r) for r in results) if c["memories"]]
        return plain({"query": query, "mode": mode, "videos": videos, "before_clip": before_clip,
                      "characters": chars, "clips": clips})

    def character(self, char_id: int | None = None, name: str | None = None,
                  videos: Sequence[str] | None = None) -> dict[str, Any]:
        if (char_id is None) == (not name):
            raise InvalidInputError("give exactly one of char_id or name")
        candidates: list[dict[str, Any]] = []
        if char_id is None:
            found = self.graph.search.characters_named(str(name), list(videos) if videos else None)
            if not found:
                raise NotFoundError(f"no character is named {name!r} in memory")
            char_id = found[0][0]
            candidates = [{"char_id": c, "mentions": n} for c, n in found]
        view = reads.character(self.graph, int(char_id), memory_limit=MAX_CHARACTER_MEMORIES)
        appearances: dict[str, dict[str, int]] = {}
        for m in view.memories:
            span = appearances.setdefault(m["video_id"], {"first_clip": m["clip_index"], "last_clip": m["clip_index"]})
            span["first_clip"] = min(span["first_clip"], m["clip_index"])
            span["last_clip"] = max(span["last_clip"], m["clip_index"])
        votes = self.graph.vote_history(char_id=view.char_id)
        out: dict[str, Any] = {
            "char_id": view.char_id, "name": view.name, "aliases": view.aliases,
            "faces": [m["entity_id"] for m in view.members if m["kind"] == "face"],
            "voices": [m["entity_id"] for m in view.members if m["kind"] == "voice"],
            "speakers": [m["entity_id"] for m in view.members if m["kind"] == "speaker"],
            "same_as": [{"face": s["face"], "voice": s["voice"], "votes": s["votes"], "evidence_clips": s["evidence"],
                         "face_character": s["face_char"], "voice_character": s["voice_char"]}
                        for s in view.same_as],
            "manual_votes": [v.model_dump() for v in votes],
            "facts": [m["text"] for m in view.memories if m["kind"] == "semantic" and not is_equivalence(m["text"])],
            "episodes": [{"video": m["video_id"], "clip": m["clip_index"], "text": m["text"]}
                         for m in view.memories if m["kind"] == "episodic"][:50],
            "appearances": appearances,
            "face_crops": {str(k): [c["uri"] for c in v] for k, v in view.crops.items()},
            "voice_snippets": {str(k): [{"uri": s["uri"], "text": s["text"]} for s in v]
                               for k, v in view.snippets.items()},
        }
        if view.char_id != char_id:
            out["resolved_from_alias"] = char_id
        if len(candidates) > 1:
            out["other_candidates"] = candidates[1:]
        return plain(out)

    def ask(self, question: str, videos: Sequence[str] | None = None, before_clip: int | None = None
            ) -> dict[str, Any]:
        with self._ask_lock:
            if self._controller is None:
                if self._controller_factory is not None:
                    self._controller = self._controller_factory()
                else:
                    from m3graph.reasoning.control import make_controller

                    self._controller = make_controller(self.settings, self.graph, self.embedder)
            trace = self._controller.answer(question, list(videos) if videos else None, before_clip)
        return plain(trace.to_dict())

    def graph_schema(self) -> dict[str, Any]:
        return plain(schema.describe(self.graph))

    def read_cypher(self, query: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        out = run_guarded(self.graph.ex.driver, self.graph.ex.database, query, params or {},
                          timeout_s=self.cypher_timeout_s, max_rows=self.cypher_max_rows)
        return plain({"columns": out.columns, "rows": out.rows, "row_count": len(out.rows),
                      "truncated": out.truncated, "notes": out.notes})

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

    def _ingest_conversation(self, conv: Any) -> dict[str, Any]:
        from m3graph.ingest.chat.ingest import ingest_conversation

        summary = ingest_conversation(self.graph, conv, self.embedder)
        return plain(summary)

    def remember(self, text: str, source: str | None = None, speaker: str | None = None) -> dict[str, Any]:
        """One note as a one-turn session of `source`: the chat write path (speaker entity, memory, embedding)."""
        from m3graph.ingest.chat.generic_json import session_digest
        from m3graph.ingest.chat.model import Conversation, Session, Turn

        text = " ".join(text.split())
        if not text:
            raise InvalidInputError("nothing to remember: the text is empty")
        source = source or REMEMBER_SOURCE
        speaker = " ".join((speaker or REMEMBER_SPEAKER).split())
        check_video_id(source)
        now = datetime.now(UTC)
        turn = Turn(turn_id=f"note:{uuid.uuid4().hex[:12]}", speaker=speaker, text=text)
        session = Session(index=0, started_at=now, turns=(turn,), key=session_digest((turn,), now))
        conv = Conversation(source_id=source, sessions=(session,), speakers=(speaker,), path=None)
        summary = self._ingest_conversation(conv)
        clips = summary.get("sessions_written") or []
        return {"remembered": text, "source": source, "speaker": speaker, "clip": clips[0] if clips else None,
                "turn_id": turn.turn_id, "summary": summary}

    def ingest_chat(self, path: str, source_id: str | None = None) -> dict[str, Any]:
        from m3graph.ingest.chat.formats import load_conversation

        if source_id is not None:
            check_video_id(source_id)
        conv, _ = load_conversation(self._local_file(path), "auto", source_id)
        check_video_id(conv.source_id)
        return self._ingest_conversation(conv)

    def ingest(self, paths: Sequence[str], live: bool = False, video_id: str | None = None) -> dict[str, Any]:
        if not paths:
            raise InvalidInputError("give at least one path")
        if live and len(paths) != 1:
            raise InvalidInputError("live ingestion watches one directory: give exactly one path")
        if video_id is not None:
            check_video_id(video_id)
            if len(paths) > 1:
                raise InvalidInputError("video_id names one video: give one path")
        files = [self._local_file(p, directory=live) for p in paths]
        job = self.jobs.start(files, live, video_id)
        return plain(job.status())

    def ingest_status(self, job_id: str | None = None) -> dict[str, Any]:
        if job_id:
            return plain(self.jobs.get(job_id).status())
        return plain({"jobs": [j.status() for j in self.jobs.all()]})

    def vote(self, a: int, b: int, verdict: Literal["same", "different"], note: str | None = None) -> dict[str, Any]:
        record = self.graph.vote_identity(a, b, verdict, note=note or "mcp", source="manual")
        chars = self.graph.characters_of([a, b])
        return plain({"vote": record, "characters": {str(a): chars.get(a), str(b): chars.get(b)}})

    def undo_vote(self, vote_id: int) -> dict[str, Any]:
        undone = self.graph.undo_vote(vote_id)
        return {"vote_id": vote_id, "undone": undone, "note": None if undone else "the vote was already undone"}

    def delete(self, kind: Literal["clip", "video", "character"], video: str | None = None, clip: int | None = None,
               char_id: int | None = None) -> dict[str, Any]:
        if kind == "clip":
            if video is None or clip is None:
                raise InvalidInputError("deleting a clip needs video and clip")
            self.graph.delete_clip(video, clip)
            return {"deleted": "clip", "video": video, "clip": clip}
        if kind == "video":
            if video is None:
                raise InvalidInputError("deleting a video needs video")
            n = self.graph.delete_video(video)
            return {"deleted": "video", "video": video, "clips": n}
        if kind == "character":
            if char_id is None:
                raise InvalidInputError("deleting a character needs char_id")
            return plain({"deleted": "character", "char_id": char_id, "summary": self.graph.delete_character(char_id)})
        raise InvalidInputError(f"nothing of kind {kind!r} can be deleted (clip, video or character)")
