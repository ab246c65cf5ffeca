"""`MemoryGraph`: the one entry point to the memory graph for ingestion, search and maintenance.

Constructing it only assigns; `connect()` opens the driver and applies migrations. Every write method is
one managed transaction keyed by (video, clip), so a retried Celery task or a re-run CLI command leaves the
graph exactly as one run would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from m3graph.graphdb import deletion
from m3graph.graphdb.characters import refresh_characters
from m3graph.graphdb.executor import Executor, Tx
from m3graph.graphdb.identity import resolve
from m3graph.graphdb.memories import record_clip_votes, write_clip_memories
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
        self.ex.write("graph/upsert_clip", **clip.upsert_params(video_name))

    def register_clip(self, clip: ClipInfo, faces: Sequence[FaceCluster], voices: Sequence[VoiceCluster],
                      video_name: str | None = None) -> tuple[list[Resolution], list[Resolution]]:
        """Clip, face and voice resolution and the meta-clip vote in ONE transaction: all or nothing.

        A clip with exactly one face cluster and one voice cluster (the paper's meta-clip) votes that they are
        the same person.
        """

        def work(tx: Tx) -> tuple[list[Resolution], list[Resolution]]:
            tx.run("graph/upsert_clip", **clip.upsert_params(video_name))
            face_res, _ = resolve(tx, self.settings, "face", clip.video_id, clip.clip_index, faces)
            voice_res, _ = resolve(tx, self.settings, "voice", clip.video_id, clip.clip_index, voices)
            votes = []
            if len(face_res) == 1 and len(voice_res) == 1:
                votes = [EquivalenceVote(face_id=face_res[0].entity_id, voice_id=voice_res[0].entity_id,
                                         source="meta-clip")]
            record_clip_votes(tx, self.settings, clip.video_id, clip.clip_index, votes, "meta-clip")
            return face_res, voice_res

        return self.ex.write_tx(work, label="register_clip")

    def set_clip_status(self, video_id: str, clip_index: int, status: str, detail: str | None = None) -> None:
        self.ex.write("graph/set_clip_status", video_id=video_id, clip_index=clip_index, status=status,
                      detail=detail)

    def resolve_faces(self, video_id: str, clip_index: int, clusters: Sequence[FaceCluster]) -> list[Resolution]:
        return self.ex.write_tx(lambda tx: resolve(tx, self.settings, "face", video_id, clip_index, clusters)[0],
                                label="resolve_faces")

    def resolve_voices(self, video_id: str, clip_index: int, clusters: Sequence[VoiceCluster]) -> list[Resolution]:
        return self.ex.write_tx(lambda tx: resolve(tx, self.settings, "voice", video_id, clip_index, clusters)[0],
                                label="resolve_voices")

    def write_memories(self, video_id: str, clip_index: int, memories: Sequence[MemoryIn],
                       votes: Sequence[EquivalenceVote] = ()) -> MemoryWriteSummary:
        """Replaces this clip's memories and memory-sourced votes (equivalence lines become votes too)."""
        return self.ex.write_tx(
            lambda tx: write_clip_memories(tx, self.settings, video_id, clip_index, memories, votes, ("memory",)),
            label="write_memories")

    def record_votes(self, video_id: str, clip_index: int, votes: Sequence[EquivalenceVote],
                     source: str = "meta-clip") -> int:
        """Sets the clip's votes from one non-memory source (a meta-clip, an import, a manual fix)."""

        return self.ex.write_tx(
            lambda tx: record_clip_votes(tx, self.settings, video_id, clip_index, votes, source),
            label="record_votes")

    def refresh_characters(self, entity_ids: Sequence[int]) -> int:
        return self.ex.write_tx(lambda tx: refresh_characters(tx, self.settings, entity_ids), label="characters")

    # -- maintenance -----------------------------------------------------------------------------------
    def delete_clip(self, video_id: str, clip_index: int) -> None:
        deletion.delete_clip(self.ex, self.settings, video_id, clip_index)

    def delete_video(self, video_id: str) -> int:
        return deletion.delete_video(self.ex, self.settings, video_id)

    def delete_character(self, char_id: int) -> dict[str, int]:
        return deletion.delete_character(self.ex, self.settings, char_id)

    def counts(self, video_id: str | None = None) -> dict[str, int]:
        return {r["label"]: int(r["n"] or 0) for r in self.ex.read("graph/counts", video_id=video_id)}

    def characters_of(self, entity_ids: Sequence[int]) -> dict[int, int]:
        return {r["entity_id"]: r["char_id"] for r in self.ex.read("graph/characters_of", ids=list(entity_ids))}

    def clip(self, video_id: str, clip_index: int) -> dict[str, Any] | None:
        rows = self.ex.read("graph/get_clip", video_id=video_id, clip_index=clip_index)
        return rows[0] if rows else None


__all__ = ["MemoryGraph", "clip_key"]
