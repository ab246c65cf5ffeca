"""`MemoryGraph`: the one entry point to the memory graph for ingestion, search and maintenance.

Constructing it only assigns; `connect()` opens the driver and applies migrations. Every write method is
one managed transaction keyed by (video, clip), so a retried Celery task or a re-run CLI command leaves the
graph exactly as one run would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from m3graph import data_files
from m3graph.graphdb import chat_sessions, clip_state, deletion
from m3graph.graphdb.characters import refresh_characters
from m3graph.graphdb.clip_state import ClipProgress, ClipState
from m3graph.graphdb.executor import Executor, Tx
from m3graph.graphdb.files import FileLinks, remove_stored
from m3graph.graphdb.identity import resolve
from m3graph.graphdb.imports import ImportRows, write_import_tx
from m3graph.graphdb.memories import record_clip_votes, write_clip_memories
from m3graph.graphdb.on_screen import on_screen_links
from m3graph.graphdb.search import MemorySearch
from m3graph.graphdb.types import (
    ClipInfo,
    EquivalenceVote,
    FaceCluster,
    MemoryIn,
    MemoryWriteSummary,
    Resolution,
    VoiceCluster,
    clip_key,
)
from m3graph.graphdb.votes import Verdict, VoteRecord, undo_vote, vote_history, vote_identity
from m3graph.schema import apply_migrations
from m3graph.settings import Settings


class MemoryGraph:
    def __init__(self, executor: Executor, settings: Settings) -> None:
        self.ex = executor
        self.settings = settings
        self.search = MemorySearch(executor, settings)

    @classmethod
    def connect(cls, settings: Settings, migrate: bool = True) -> MemoryGraph:
        executor = Executor.connect(settings)
        if migrate:
            try:
                apply_migrations(executor, settings)
            except BaseException:
                executor.close()  # a refused schema must not leak the driver's connection pool
                raise
        return cls(executor, settings)

    def close(self) -> None:
        self.ex.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ingestion -------------------------------------------------------------------------------------
    def upsert_clip(self, clip: ClipInfo, video_name: str | None = None) -> None:
        self.ex.write("graph/upsert_clip", clips=[clip.upsert_params(video_name)])

    def register_clip(self, clip: ClipInfo, faces: Sequence[FaceCluster], voices: Sequence[VoiceCluster],
                      video_name: str | None = None) -> tuple[list[Resolution], list[Resolution]]:
        """Clip, face and voice resolution and the meta-clip vote in ONE transaction: all or nothing.

        A clip with exactly one face cluster and one voice cluster (the paper's meta-clip) votes that they are
        the same person; in any other clip a voice votes for the face alone on screen while it speaks, where both
        dominate each other (`memory.on_screen_votes`, m3graph/graphdb/on_screen.py).
        """

        return self.ex.write_tx(lambda tx: self._register_tx(tx, clip, faces, voices, video_name),
                                label="register_clip")

    def _register_tx(self, tx: Tx, clip: ClipInfo, faces: Sequence[FaceCluster], voices: Sequence[VoiceCluster],
                     video_name: str | None) -> tuple[list[Resolution], list[Resolution]]:
        tx.run("graph/upsert_clip", clips=[clip.upsert_params(video_name)])
        face_res, _ = resolve(tx, self.settings, "face", clip.source_id, clip.clip_index, faces)
        voice_res, _ = resolve(tx, self.settings, "voice", clip.source_id, clip.clip_index, voices)
        votes = []
        if len(face_res) == 1 and len(voice_res) == 1:
            votes = [EquivalenceVote(face_id=face_res[0].entity_id, voice_id=voice_res[0].entity_id,
                                     source="meta-clip")]
        elif self.settings.memory.on_screen_votes:
            votes = self._on_screen_votes(tx, clip, faces, voices, face_res, voice_res)
        record_clip_votes(tx, self.settings, clip.source_id, clip.clip_index, votes, ("meta-clip", "on-screen"))
        return face_res, voice_res

    def _on_screen_votes(self, tx: Tx, clip: ClipInfo, faces: Sequence[FaceCluster], voices: Sequence[VoiceCluster],
                         face_res: Sequence[Resolution], voice_res: Sequence[Resolution]) -> list[EquivalenceVote]:
        """A Voice and the Face alone on screen while it speaks (graphdb/on_screen.py), counted per entity; a
        meta-clip's single pair already has its vote, so a clip gives one or the other, never both for one pair.

        Guard: the voices of one clip are distinct speakers and its faces distinct people, so a link that earlier
        clips contradict here is not voted: the face already linked to another voice heard in this clip, or the
        voice already linked to another face seen in it (a Face holding two people's photos, a listener).
        """
        cfg = self.settings.memory
        face_ids = {r.label: r.entity_id for r in face_res}
        voice_ids = {r.label: r.entity_id for r in voice_res}
        links = on_screen_links(faces, voices, min_s=cfg.on_screen_min_s, dominance=cfg.on_screen_dominance,
                                face_ids=face_ids, voice_ids=voice_ids)
        if not links:
            return []
        prior = {(r["face_id"], r["voice_id"]) for r in tx.run(
            "votes/prior_links", clip_key=clip.key, face_ids=sorted(set(face_ids.values())),
            voice_ids=sorted(set(voice_ids.values())))}
        return [EquivalenceVote(face_id=x.face_label, voice_id=x.voice_label, source="on-screen") for x in links
                if not any((f == x.face_label) != (v == x.voice_label) for f, v in prior)]

    def resolve_clip(self, clip: ClipInfo, faces: Sequence[FaceCluster], voices: Sequence[VoiceCluster],
                     video_name: str | None = None) -> tuple[list[Resolution], list[Resolution]]:
        """The *resolve* step: `register_clip` and the clip's `resolved` state in ONE transaction.

        Re-resolving a clip returns its recorded mapping and changes nothing, except that a memorized clip
        reads `resolved` again until its memorization is redone (a resubmission redoes both steps).
        """

        def work(tx: Tx) -> tuple[list[Resolution], list[Resolution]]:
            out = self._register_tx(tx, clip, faces, voices, video_name)
            clip_state.set_state_tx(tx, clip.source_id, clip.clip_index, ClipState.RESOLVED)
            return out

        return self.ex.write_tx(work, label="resolve_clip")

    # -- clip progress (m3graph.graphdb.clip_state) --------------------------------------------------------
    def plan_clips(self, clips: Sequence[ClipInfo], video_name: str | None = None) -> None:
        clip_state.plan(self.ex, clips, video_name)

    def mark_perceived(self, source_id: str, clip_index: int) -> bool:
        return clip_state.mark_perceived(self.ex, source_id, clip_index)

    def set_clip_state(self, source_id: str, clip_index: int, state: ClipState, reason: str | None = None) -> bool:
        return clip_state.set_state(self.ex, source_id, clip_index, state, reason)

    def set_clip_status(self, source_id: str, clip_index: int, status: str, detail: str | None = None) -> None:
        """Older name of `set_clip_state` ("done" is `memorized`), kept for callers outside ingestion."""
        self.set_clip_state(source_id, clip_index, ClipState.MEMORIZED if status == "done" else ClipState(status),
                            detail)

    def clip_states(self, source_id: str) -> list[ClipProgress]:
        """Every clip of the video with its state, reason and time, in clip order."""
        return clip_state.states(self.ex, source_id)

    def unresolved_before(self, source_id: str, clip_index: int) -> list[int]:
        return clip_state.unresolved_before(self.ex, source_id, clip_index)

    def clip_identities(self, source_id: str, clip_index: int) -> tuple[dict[int, int], dict[int, int]]:
        """A resolved clip's (face label → entity id, voice label → entity id), without resolving it again."""
        faces, voices = (
            {r["label"]: r["entity_id"] for r in self.ex.read(name, source_id=source_id, clip_index=clip_index)}
            for name in ("identity/face_resolved", "identity/voice_resolved"))
        return faces, voices

    def clip_memory_ids(self, source_id: str, clip_index: int) -> list[str]:
        """The memories this clip supports now (what a failed re-memorization keeps)."""
        return [r["memory_id"] for r in self.ex.read("memory/clip_state", clip_key=clip_key(source_id, clip_index),
                                                     source_id=source_id)]

    def resolve_faces(self, source_id: str, clip_index: int, clusters: Sequence[FaceCluster]) -> list[Resolution]:
        return self.ex.write_tx(lambda tx: resolve(tx, self.settings, "face", source_id, clip_index, clusters)[0],
                                label="resolve_faces")

    def resolve_voices(self, source_id: str, clip_index: int, clusters: Sequence[VoiceCluster]) -> list[Resolution]:
        return self.ex.write_tx(lambda tx: resolve(tx, self.settings, "voice", source_id, clip_index, clusters)[0],
                                label="resolve_voices")

    def write_memories(self, source_id: str, clip_index: int, memories: Sequence[MemoryIn],
                       votes: Sequence[EquivalenceVote] = ()) -> MemoryWriteSummary:
        """Replaces this clip's memories and memory-sourced votes (equivalence lines become votes too)."""
        return self.ex.write_tx(
            lambda tx: write_clip_memories(tx, self.settings, source_id, clip_index, memories, votes, ("memory",)),
            label="write_memories")

    def write_memorization(self, source_id: str, clip_index: int, memories: Sequence[MemoryIn],
                           state: ClipState = ClipState.MEMORIZED, reason: str | None = None) -> MemoryWriteSummary:
        """The *memorize* step's write: `write_memories` and the clip's state in ONE transaction.

        The transaction takes the video's memory lock (semantic dedup is per video) only for this write; the
        model call happens before, outside any lock, so clips of one video memorize in any order.
        """

        def work(tx: Tx) -> MemoryWriteSummary:
            summary = write_clip_memories(tx, self.settings, source_id, clip_index, memories, (), ("memory",))
            clip_state.set_state_tx(tx, source_id, clip_index, state, reason)
            return summary

        return self.ex.write_tx(work, label="write_memorization")

    def record_votes(self, source_id: str, clip_index: int, votes: Sequence[EquivalenceVote],
                     source: str = "meta-clip") -> int:
        """Sets the clip's votes from one non-memory source (a meta-clip, an import, a manual fix)."""

        return self.ex.write_tx(
            lambda tx: record_clip_votes(tx, self.settings, source_id, clip_index, votes, source),
            label="record_votes")

    def video_exists(self, source_id: str) -> bool:
        return bool(self.ex.read("graph/video_exists", source_id=source_id))

    def allocate_entity_ids(self, n: int) -> int:
        """Reserves `n` consecutive entity ids (a failed write only leaves a gap); returns the first."""
        return int(self.ex.write("graph/allocate_ids", counter="entity", n=n)[0]["first"])

    def write_import(self, rows: ImportRows) -> None:
        """An imported memory graph (m3graph.graphdb.imports) in one transaction: all or nothing."""
        self.ex.write_tx(lambda tx: write_import_tx(tx, self.settings, rows), label="import_pickle")

    def write_chat_session(self, source_id: str, session_key: str, clip: ClipInfo, speaker_keys: dict[str, str],
                           turns_by_speaker: dict[str, int], n_turns: int,
                           render: chat_sessions.RenderMemories,
                           files: FileLinks | None = None, faces: Sequence[FaceCluster] = (),
                           voices: Sequence[VoiceCluster] = ()) -> int | None:
        """One conversation session in one transaction (m3graph.graphdb.chat_sessions); None if already stored."""
        return chat_sessions.write_session(self.ex, self.settings, source_id, session_key, clip, speaker_keys,
                                           turns_by_speaker, n_turns, render, files, faces, voices)

    def refresh_characters(self, entity_ids: Sequence[int]) -> int:
        return self.ex.write_tx(lambda tx: refresh_characters(tx, self.settings, entity_ids), label="characters")

    # -- manual identity votes (m3graph.graphdb.votes): override model votes, undoable, kept as history --
    def vote_identity(self, a: int, b: int, verdict: Verdict, note: str | None = None,
                      source: str = "manual") -> VoteRecord:
        return vote_identity(self.ex, self.settings, a, b, verdict, note, source)

    def undo_vote(self, vote_id: int) -> bool:
        return undo_vote(self.ex, self.settings, vote_id)

    def vote_history(self, entity_id: int | None = None, *, char_id: int | None = None) -> list[VoteRecord]:
        return vote_history(self.ex, entity_id, char_id)

    # -- maintenance -----------------------------------------------------------------------------------
    # Each delete commits in the graph first, then removes the files under data_dir (m3graph.data_files).
    def delete_clip(self, source_id: str, clip_index: int) -> None:
        stored = deletion.delete_clip(self.ex, self.settings, source_id, clip_index)
        data_files.delete_clip_files(self.settings, source_id, clip_index)
        remove_stored(self.settings, stored)  # shared files no other session holds (graphdb/files.py)

    def delete_video(self, source_id: str) -> int:
        n, stored = deletion.delete_video(self.ex, self.settings, source_id)
        data_files.delete_video_files(self.settings, source_id)
        remove_stored(self.settings, stored)
        return n

    def delete_character(self, char_id: int) -> dict[str, int]:
        """The person's graph data, then their crops, snippets, cached embeddings and raw model outputs."""
        evidence = [data_files.PersonEvidence(**r) for r in self.ex.read("delete/character_files", char_id=char_id)]
        summary = deletion.delete_character(self.ex, self.settings, char_id)
        return summary | data_files.delete_person_files(self.settings, evidence)

    def counts(self, source_id: str | None = None) -> dict[str, int]:
        return {r["label"]: int(r["n"] or 0) for r in self.ex.read("graph/counts", source_id=source_id)}

    def characters_of(self, entity_ids: Sequence[int]) -> dict[int, int]:
        return {r["entity_id"]: r["char_id"] for r in self.ex.read("graph/characters_of", ids=list(entity_ids))}

    def clip(self, source_id: str, clip_index: int) -> dict[str, Any] | None:
        rows = self.ex.read("graph/get_clip", source_id=source_id, clip_index=clip_index)
        return rows[0] if rows else None


__all__ = ["MemoryGraph", "clip_key"]
