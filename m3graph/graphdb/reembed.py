"""Moving a graph to a new embedding model: re-embed every node of one kind, re-create its vector index.

Vectors from two models are not comparable, so a graph holds one model per kind, and connecting with another
model's dimension (or, for text, another model's name: the graph's `EmbeddingModel` mark) is refused
(`schema.check_schema`). `reembed` is the way across for all three kinds (text memories, faces, voices), and it
can be interrupted and run again at any point:

1. the new model is loaded first (by the caller: this layer never imports the embedding or perception code):
   without it nothing is touched;
2. faces and voices only: every observation file the move needs is checked before anything changes, and a
   missing one refuses the move (unless told to drop it; see "Missing files" below);
3. if the vector index's dimension differs from the model's, the index is dropped (a write of a vector of the
   new dimension must not meet an index of the old one);
4. nodes not yet marked with the new model are re-embedded in batches, in key order (`memory_id`, `entity_id`),
   each batch one transaction that sets the vectors and the model mark (`embedding_model`) together;
5. the index is created with the new dimension (IF NOT EXISTS; the memory index with filter properties where the
   server has them, as the migrations create it) and awaited.

A re-run skips marked nodes, so an interrupted move resumes, and a finished one does nothing but check the index.

Faces and voices. An entity's vectors are derived from its observations (`FaceObs.crop_uri`, a JPEG of the face;
`Utterance.audio_uri`, a WAV snippet of the turn; both files under `settings.data_dir`, referenced by file URI).
A batch re-embeds every observation of its entities from those files with the new model (the caller's
`FileEmbedder`), then rebuilds each entity's exemplar set exactly as deletion does: the best `cap` exemplar
candidates by quality (stored qualities are kept, so with every file present the set is the same observations
as before), and the centroid from them. Entity ids, `SAME_AS` votes, co-occurrences, characters and mentions are
not touched, so every memory keeps its people; only the vectors change. A file whose URI no longer exists is
also looked for at the same relative place under `settings.data_dir` (`videos/...`, `imports/...`), so a moved
data directory still works.

Missing files. An observation whose file is gone (deleted, never kept, an import without crops) cannot be
re-embedded. By default (`missing="refuse"`) the move refuses before touching anything, with `MissingFilesError`
naming the entities and files (exit status 66): nothing is dropped silently, and restoring the files then
running again finishes the move. With `missing="drop"` (`m3graph reembed --drop-missing`) those observations
lose their vector and stop being exemplar candidates; each entity is rebuilt from the observations whose files
exist, and an entity with none left keeps its id, memories, votes and character but loses its vectors (no
centroid: it is no longer in the vector index and no new observation can match it). Both counts are reported
(`ReembedSummary.dropped_observations`, `.unmatchable`). Either way the index is re-created only once every
entity carries the new model's vectors or none, so it never holds two dimensions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import unquote, urlparse

import numpy as np

from m3graph.errors import InvalidInputError, M3GraphError, NotFoundError
from m3graph.graphdb.executor import Executor, Tx
from m3graph.graphdb.identity import EntityState
from m3graph.schema.migrations import _vector_params, memory_index_statement
from m3graph.settings import Settings
from m3graph.storage.keys import is_key

if TYPE_CHECKING:  # the caller loads the model: the store layer never imports the embedding layer
    from m3graph.embedding import TextEmbedder

Kind = Literal["text", "face", "voice"]
KINDS: tuple[Kind, ...] = ("text", "face", "voice")
_INDEX = {"text": "memory_embedding", "face": "face_centroid", "voice": "voice_centroid"}
# Per-kind query names, spelled out so that grep finds every caller of a .cypher file.
_FILES = {"face": "reembed/face_files", "voice": "reembed/voice_files"}
_TO_EMBED = {"face": "reembed/faces_to_embed", "voice": "reembed/voices_to_embed"}
_PROGRESS = {"face": "reembed/face_progress", "voice": "reembed/voice_progress"}
_DROP_INDEX = {"face": "reembed/drop_face_centroid", "voice": "reembed/drop_voice_centroid"}
_CREATE_INDEX = {"face": "schema/vector_face_centroid", "voice": "schema/vector_voice_centroid"}
_SET_VECTORS = {"face": "reembed/set_face_vectors", "voice": "reembed/set_voice_vectors"}


class ReembedNotImplementedError(M3GraphError):
    """Kept for callers of earlier versions, where faces and voices were refused; nothing raises it now."""


class MissingFilesError(NotFoundError):
    """Observation files needed to re-embed faces or voices are gone; nothing was changed by this run."""

    def __init__(self, message: str, missing: dict[int, list[str]]) -> None:
        super().__init__(message)
        self.missing = missing  # entity_id -> the observation keys whose files are gone


class FileEmbedder(Protocol):
    """The new face or voice model, loaded by the caller: one unit vector per stored observation file."""

    model: str  # the name every re-embedded node is marked with
    dim: int

    def embed_files(self, paths: Sequence[Path]) -> np.ndarray:
        """`(len(paths), dim)` unit rows, one per face crop / voice snippet."""
        ...


@dataclass(frozen=True)
class ReembedSummary:
    kind: Kind
    model: str
    dim: int
    embedded: int  # nodes embedded by this run (memories, or face/voice entities)
    total: int
    index_recreated: bool
    observations: int = 0  # face/voice observations re-embedded from their files by this run
    dropped_observations: int = 0  # missing="drop": observations whose file was gone, left without a vector
    unmatchable: list[int] = field(default_factory=list)  # missing="drop": entities left with no vector at all


def index_dimension(ex: Executor, kind: Kind) -> int | None:
    for row in ex.read("schema/list_indexes"):
        if row["name"] == _INDEX[kind] and row["type"] == "VECTOR":
            return int(row["options"]["indexConfig"]["vector.dimensions"])
    return None


def reembed_text(ex: Executor, settings: Settings, embedder: TextEmbedder, batch_size: int = 256,
                 progress: Callable[[int, int], None] | None = None) -> ReembedSummary:
    """Every Memory embedded by the configured text model; the memory vector index at its dimension."""
    model, dim = settings.text_model.name, settings.memory.text_dim
    probe = embedder.embed(["probe"])  # loads the model: a missing model refuses before anything changes
    if probe.shape[1] != dim:
        raise M3GraphError(f"text model {model} produces {probe.shape[1]}-d vectors, not {dim}")
    have = index_dimension(ex, "text")
    recreated = have != dim
    if have is not None and have != dim:
        ex.schema("schema/drop_memory_embedding")
    progress_row = ex.read("reembed/memory_progress", model=model)[0]
    total, done = int(progress_row["total"]), int(progress_row["done"])
    embedded, cursor = 0, ""
    while True:
        rows = ex.read("reembed/memories_to_embed", model=model, after=cursor, k=batch_size)
        if not rows:
            break
        vectors = embedder.embed([r["text"] for r in rows])
        ex.write("reembed/set_memory_embeddings", model=model,
                 rows=[{"memory_id": r["memory_id"], "embedding": v.tolist()} for r, v in zip(rows, vectors,
                                                                                              strict=True)])
        embedded += len(rows)
        cursor = rows[-1]["memory_id"]
        if progress:
            progress(done + embedded, total)
    ex.write("reembed/set_text_model", model=model)  # every memory is the new model's: the graph is now its
    statement = memory_index_statement(ex)
    ex.schema(statement, **_vector_params(settings, statement))
    ex.schema("schema/await_indexes", timeout_s=600)
    return ReembedSummary("text", model, dim, embedded, total, recreated)



Missing = Literal["refuse", "drop"]


def stored_file(uri: str | None, data_dir: Path) -> Path | None:
    """The file an observation was embedded from, or None when it is gone (or was never kept as a file).

    A `file://` URI that no longer exists is looked for at the same place relative to `data_dir` (from its
    `videos/` or `imports/` folder on), so a data directory moved after ingestion still serves its files.
    """
    if not uri:
        return None
    if is_key(uri):  # a storage key (m3graph.storage): the local store's file
        return path if (path := data_dir / uri).is_file() else None
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return None
    path = Path(unquote(parsed.path))
    if path.is_file():
        return path
    parts = path.parts
    for top in ("videos", "imports"):
        if top in parts:
            moved = Path(data_dir, *parts[len(parts) - 1 - parts[::-1].index(top):])
            if moved.is_file():
                return moved
    return None


@dataclass
class _Entity:
    entity_id: int
    observations: list[dict[str, Any]]  # key, uri, quality, candidate, path (None: missing)

    @property
    def missing(self) -> list[str]:
        return [o["key"] for o in self.observations if o["path"] is None]


def _entities(ex: Executor, kind: Literal["face", "voice"], ids: Sequence[int], data_dir: Path) -> list[_Entity]:
    found: dict[int, _Entity] = {i: _Entity(i, []) for i in ids}
    for row in ex.read(_FILES[kind], ids=list(ids)):
        found[row["entity_id"]].observations.append({**row, "path": stored_file(row["uri"], data_dir)})
    return [found[i] for i in ids]


def _check_files(ex: Executor, kind: Literal["face", "voice"], model: str, data_dir: Path,
                 batch_size: int) -> dict[int, list[str]]:
    """Entities still to move whose observation files are gone (entity -> observation keys); nothing written."""
    missing: dict[int, list[str]] = {}
    cursor = -1
    while rows := ex.read(_TO_EMBED[kind], model=model, after=cursor, k=batch_size):
        ids = [r["entity_id"] for r in rows]
        for entity in _entities(ex, kind, ids, data_dir):
            if not entity.observations or entity.missing:
                missing[entity.entity_id] = entity.missing
        cursor = ids[-1]
    return missing


def _missing_message(kind: str, missing: dict[int, list[str]]) -> str:
    shown = ", ".join(f"{kind}_{eid} ({len(keys)} file{'s' if len(keys) != 1 else ''}"
                      f"{': ' + keys[0] if keys else ': no observations'})"
                      for eid, keys in sorted(missing.items())[:10])
    more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
    return (f"{len(missing)} {kind} entit{'ies' if len(missing) != 1 else 'y'} cannot be re-embedded because "
            f"their stored observation files are gone: {shown}{more}; nothing was changed. Restore the files under "
            f"the data directory, or run `m3graph reembed --kind {kind} --drop-missing` to re-embed from the files "
            "that remain (an entity with none left keeps its memories but can no longer be matched)")


def reembed_entities(ex: Executor, settings: Settings, kind: Literal["face", "voice"], embedder: FileEmbedder,
                     batch_size: int = 64, progress: Callable[[int, int], None] | None = None,
                     missing: Missing = "refuse") -> ReembedSummary:
    """Every Face (or Voice) re-embedded from its stored crops (snippets) by `embedder`; the index at its dimension."""
    ident = settings.identity
    dim = ident.face_dim if kind == "face" else ident.voice_dim
    cap = ident.max_face_exemplars if kind == "face" else ident.max_voice_exemplars
    model = embedder.model
    if embedder.dim != dim:
        raise M3GraphError(f"{kind} model {model} produces {embedder.dim}-d vectors, not {dim}")
    if missing not in ("refuse", "drop"):
        raise InvalidInputError(f"missing must be 'refuse' or 'drop', not {missing!r}")
    data_dir = Path(settings.data_dir).resolve()
    if missing == "refuse" and (gone := _check_files(ex, kind, model, data_dir, batch_size)):
        raise MissingFilesError(_missing_message(kind, gone), gone)
    have = index_dimension(ex, kind)
    recreated = have != dim
    if have is not None and have != dim:
        ex.schema(_DROP_INDEX[kind])
    progress_row = ex.read(_PROGRESS[kind], model=model)[0]
    total, done = int(progress_row["total"]), int(progress_row["done"])
    embedded = n_obs = dropped = 0
    unmatchable: list[int] = []
    cursor = -1
    while rows := ex.read(_TO_EMBED[kind], model=model, after=cursor, k=batch_size):
        entities = _entities(ex, kind, [r["entity_id"] for r in rows], data_dir)
        gone = {e.entity_id: e.missing for e in entities if not e.observations or e.missing}
        if gone and missing == "refuse":  # a file went away after the check: stop where the last batch ended
            raise MissingFilesError(_missing_message(kind, gone), gone)
        paths = [o["path"] for e in entities for o in e.observations if o["path"] is not None]
        vectors = iter(_unit_rows(embedder.embed_files(paths), len(paths), dim, model) if paths else [])
        obs_rows: list[dict[str, Any]] = []
        entity_rows: list[dict[str, Any]] = []
        for entity in entities:
            cands: list[tuple[float, str, np.ndarray]] = []
            for o in entity.observations:
                vector = next(vectors) if o["path"] is not None else None
                obs_rows.append({"key": o["key"], "embedding": None if vector is None else vector.tolist()})
                if vector is not None and o["candidate"]:
                    cands.append((float(o["quality"] or 0.0), o["key"], vector))
            dropped += len(entity.missing)
            best = sorted(cands, key=lambda c: (-c[0], c[1]))[:cap]
            if best:
                state = EntityState(entity.entity_id, np.vstack([c[2] for c in best]), [c[0] for c in best],
                                    [c[1] for c in best])
                entity_rows.append(state.row())
            else:
                unmatchable.append(entity.entity_id)
                entity_rows.append({"entity_id": entity.entity_id, "exemplars": None, "quality": None, "obs": None,
                                    "dim": None, "centroid": None, "norm": None, "unit": None})
        ex.write_tx(partial(_write_batch, kind=kind, model=model, observations=obs_rows, entities=entity_rows),
                    label=f"reembed_{kind}")
        embedded += len(entities)
        n_obs += len(paths)
        cursor = entities[-1].entity_id
        if progress:
            progress(done + embedded, total)
    ex.schema(_CREATE_INDEX[kind], **_vector_params(settings, _CREATE_INDEX[kind]))
    ex.schema("schema/await_indexes", timeout_s=600)
    return ReembedSummary(kind, model, dim, embedded, total, recreated, n_obs, dropped, unmatchable)


def _unit_rows(vectors: np.ndarray, n: int, dim: int, model: str) -> np.ndarray:
    arr = np.asarray(vectors, dtype=np.float64)
    if arr.shape != (n, dim):
        raise M3GraphError(f"{model} returned vectors of shape {arr.shape} for {n} files, expected ({n}, {dim})")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise M3GraphError(f"{model} returned a zero or non-finite vector")
    return arr / norms


def _write_batch(tx: Tx, kind: str, model: str, observations: list[dict[str, Any]],
                 entities: list[dict[str, Any]]) -> None:
    tx.run(_SET_VECTORS[kind], model=model, observations=observations, entities=entities)


def reembed(ex: Executor, settings: Settings, kind: Kind, embedder: TextEmbedder | FileEmbedder | None = None,
            batch_size: int = 256, progress: Callable[[int, int], None] | None = None,
            missing: Missing = "refuse") -> ReembedSummary:
    """Moves one kind of vectors to the caller's model: `TextEmbedder` for text, a `FileEmbedder` for faces/voices."""
    if kind not in KINDS:
        raise InvalidInputError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    if embedder is None:
        raise InvalidInputError(
            f"re-embedding {kind} needs the new model's embedder (text: m3graph.embedding.text_embedder; "
            "face/voice: a FileEmbedder over the perception models, m3graph/perception/file_embed.py)")
    if kind == "text":
        return reembed_text(ex, settings, embedder, batch_size, progress)  # type: ignore[arg-type]
    return reembed_entities(ex, settings, kind, embedder, batch_size, progress, missing)  # type: ignore[arg-type]


__all__ = ["KINDS", "FileEmbedder", "MissingFilesError", "ReembedNotImplementedError", "ReembedSummary",
           "index_dimension", "reembed", "reembed_entities", "stored_file"]
