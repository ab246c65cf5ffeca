"""The evidence behind what the pages and tools show: crops, snippets, neighbouring clips, a source's people, the
files a session shares, whether a media file is the graph's, and what the server reports of its schema.

Why in the service: the explorer's pages and the MCP tools used to run these named queries themselves
(`graph.ex.read("explore/…")`), so a front end knew the store's query names and row shapes, and the MCP server
reused a query of the explorer's. Now each is one typed read here, run in a READ session with its inputs as
parameters; the front ends only render what comes back.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.graphdb.clip_state import ClipProgress
from m3graph.graphdb.files import MAX_SURROGATES, file_surrogates, held_copy, is_sha256
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.tags import parse_tags, render_characters
from m3graph.graphdb.votes import VoteRecord
from m3graph.service import reads
from m3graph.service.output import plain
from m3graph.service.results import Candidate, Result
from m3graph.settings import Settings

# The correction form lists at most this many faces and voices of one source (beyond it a list stops helping).
MAX_PICKER_ENTITIES = 400


class MediaRef(Result):
    """A stored media file and the clip that references it (what a `/media` link names)."""

    uri: str | None = None
    source_id: str
    clip_index: int
    text: str | None = None  # a voice snippet's transcript
    start_s: float | None = None
    t: float | None = None  # a face crop's frame time


class Neighbours(Result):
    previous: int | None = None
    next: int | None = None


class SourceEntity(Result):
    """A face or voice of one source, for the correction form: its character and a crop or first words."""

    kind: str
    entity_id: int
    name: str | None = None
    char_id: int | None = None
    crop: MediaRef | None = None
    snippet: str | None = None


class PhotoFace(Result):
    face: int
    character: int | None = None
    bbox: list[float] | None = None
    crop: str | None = None


class SharedFile(Result):
    """A file one session shares: its key (sha256), what it is, the turn that shared it, the first words of its
    surrogate memories (`headers`) and the faces found in it."""

    sha256: str
    name: str | None = None
    kind: str | None = None
    mime: str | None = None
    size: int | None = None
    turn_id: str | None = None
    shared_at: Any = None
    headers: list[str] = Field(default_factory=list)
    faces: list[PhotoFace] = Field(default_factory=list)


class FileText(Result):
    """A shared file's reference, where it was shared, and its surrogate memories (people as <character_K>)."""

    file: dict[str, Any]
    shares: list[dict[str, Any]]
    surrogates: list[dict[str, Any]]
    total_surrogates: int
    truncated: bool


class IndexInfo(Result):
    name: str
    type: str | None = None
    labels: list[str] | None = None
    properties: list[str] | None = None
    state: str | None = None


class ConstraintInfo(Result):
    name: str
    labels: list[str] | None = None
    properties: list[str] | None = None


class SchemaState(Result):
    """What the server reports: its indexes and constraints, the applied migrations, node and relationship counts."""

    indexes: list[IndexInfo]
    constraints: list[ConstraintInfo]
    applied: list[int]
    counts: dict[str, int]


class Evidence:
    """The evidence reads over one open store, as `MemoryService.evidence`; every one a named READ query."""

    def __init__(self, graph: MemoryGraph, settings: Settings) -> None:
        self.graph = graph
        self.settings = settings

    def characters(self, limit: int = 500) -> list[reads.CharacterSummary]:
        """The largest characters first, each with its members (`face_3`, `voice_5`)."""
        return reads.characters(self.graph, limit)

    def character(self, char_id: int, crops_per_face: int = 4, snippets_per_voice: int = 4,
                  memory_limit: int = 500) -> reads.CharacterView:
        """A character (or the one an alias was merged into) with its crops, snippets, votes and memories."""
        return reads.character(self.graph, char_id, crops_per_face, snippets_per_voice, memory_limit)

    def require_source(self, source_id: str) -> None:
        """NotFoundError for a source with no clips."""
        reads.timeline(self.graph, source_id)

    def neighbourhood(self, source_id: str, from_clip: int = 0, to_clip: int | None = None,
                      max_nodes: int = reads.MAX_GRAPH_NODES) -> reads.GraphView:
        return reads.neighbourhood(self.graph, source_id, from_clip, to_clip, max_nodes)

    def face_crops(self, faces: list[int], per: int) -> dict[int, list[MediaRef]]:
        """face entity id -> its best `per` crops (by quality)."""
        rows = self.graph.ex.read("explore/face_crops", ids=faces, per=per)
        return {int(r["entity_id"]): [MediaRef(**c) for c in r["crops"]] for r in rows}

    def voice_snippets(self, voices: list[int], per: int) -> dict[int, list[MediaRef]]:
        """voice entity id -> its first `per` utterances (uri and transcript)."""
        rows = self.graph.ex.read("explore/voice_snippets", ids=voices, per=per)
        return {int(r["entity_id"]): [MediaRef(**s) for s in r["snippets"]] for r in rows}

    def neighbours(self, source_id: str, clip_index: int) -> Neighbours:
        """The clip indexes just before and after one clip of a source (None at either end)."""
        (row,) = self.graph.ex.read("explore/clip_neighbours", source_id=source_id, clip_index=clip_index)
        return Neighbours(previous=next(iter(row["previous"]), None), next=next(iter(row["next"]), None))

    def source_entities(self, source_id: str, limit: int = MAX_PICKER_ENTITIES) -> list[SourceEntity]:
        rows = self.graph.ex.read("explore/video_entities", source_id=source_id, limit=limit)
        return [SourceEntity(**r) for r in rows]

    def character_sources(self, char_id: int) -> list[str]:
        """The sources where a character (or an alias of it) was seen or heard."""
        return [str(r["source_id"]) for r in self.graph.ex.read("explore/character_videos", char_id=char_id)]

    def characters_named(self, name: str, videos: list[str] | None = None) -> list[Candidate]:
        """The characters the memories give this name, most mentioned first."""
        return [Candidate(char_id=c, mentions=n) for c, n in self.graph.search.characters_named(name, videos)]

    def characters_of(self, entity_ids: Sequence[int]) -> dict[int, int]:
        """entity id -> the character it belongs to now (after merges)."""
        return self.graph.characters_of(list(entity_ids))

    def clip_states(self, source_id: str) -> list[ClipProgress]:
        """Every clip of a source with its ingestion state, why, and when, in clip order."""
        return self.graph.clip_states(source_id)

    def vote_history(self, char_id: int) -> list[VoteRecord]:
        """The manual identity votes about this character's entities, newest first."""
        return self.graph.vote_history(char_id=char_id)

    def session_files(self, source_id: str, clip_index: int) -> list[SharedFile]:
        rows = self.graph.ex.read("explore/clip_files", source_id=source_id, clip_index=clip_index)
        return [SharedFile(**plain(r)) for r in rows]

    def stored_file(self, sha256: str) -> tuple[Path, str, str] | None:
        """(path of the held copy, mime, shared name) of a file the graph holds, by its key; None otherwise."""
        return held_copy(self.graph.ex, self.settings, sha256)

    def media_referenced(self, uri: str, source_id: str, clip_index: int) -> bool:
        """Whether clip (video_id, clip_index) references `uri` (a crop, a snippet or the clip cut): an indexed
        lookup, so a guessed or planted uri is refused without scanning every observation."""
        rows = self.graph.ex.read("explore/media_referenced", uri=uri, source_id=source_id, clip_index=clip_index)
        return bool(rows and rows[0]["referenced"])

    def render_texts(self, texts: Sequence[str]) -> list[str]:
        """Raw `<face_N>`/`<voice_N>`/`<speaker_N>` tags as `<character_K>`, from the IS structure."""
        refs = {ref for t in texts for ref in parse_tags(t or "")}
        chars = self.graph.characters_of(sorted({eid for _, eid in refs})) if refs else {}
        mapping = {(kind, eid): chars[eid] for kind, eid in refs if eid in chars}
        return [render_characters(t or "", mapping) for t in texts]

    def file_text(self, sha256: str, limit: int = MAX_SURROGATES) -> FileText:
        """A shared file the graph holds, by its key (64 hex digits): never bytes or a path."""
        sha = sha256.strip().lower()
        if not is_sha256(sha):
            raise InvalidInputError(f"{sha256[:80]!r} is not a file key (64 hexadecimal digits, from a memory's "
                                    "files)")
        row = file_surrogates(self.graph.ex, sha, limit)
        if row is None:
            raise NotFoundError(f"no shared file {sha} in the graph")
        texts = self.render_texts([m["text"] for m in row["memories"]])
        memories = [{"memory_id": m["memory_id"], "video": m["video"], "text": t}
                    for m, t in zip(row["memories"], texts, strict=True)]
        return FileText(file={k: row[k] for k in ("sha256", "name", "kind", "mime", "size", "shared_at")},
                        shares=row["shares"], surrogates=memories, total_surrogates=row["total"],
                        truncated=row["total"] > len(memories))

    def schema_state(self) -> SchemaState:
        read = self.graph.ex.read
        return SchemaState(
            indexes=[IndexInfo(**{k: r[k] for k in ("name", "type", "labels", "properties", "state")})
                     for r in read("schema/list_indexes")],
            constraints=[ConstraintInfo(**{k: r[k] for k in ("name", "labels", "properties")})
                         for r in read("schema/list_constraints")],
            applied=sorted(int(r["version"]) for r in read("schema/applied_migrations")),
            counts=self.graph.counts())


__all__ = ["MAX_PICKER_ENTITIES", "MAX_SURROGATES", "Evidence", "FileText", "MediaRef", "Neighbours", "SchemaState",
           "SharedFile", "SourceEntity"]
