"""Moving a graph to a new embedding model: re-embed every node of one kind, re-create its vector index.

Vectors from two models are not comparable, so a graph holds one model per kind, and connecting with another
model's dimension is refused (`schema.check_schema`). `reembed` is the way across, and it can be interrupted
and run again at any point:

1. the new model is loaded first: without it nothing is touched;
2. if the vector index's dimension differs from the model's, the index is dropped (a write of a vector of the
   new dimension must not meet an index of the old one);
3. memories not yet marked with the new model are re-embedded in batches, in `memory_id` order, each batch one
   transaction that sets the vectors and the model mark together;
4. the index is created with the new dimension (IF NOT EXISTS; with filter properties where the server has
   them, as the migrations create it) and awaited.

A re-run skips marked memories, so an interrupted move resumes, and a finished one does nothing but check the
index. Faces and voices will follow the same steps (their exemplars are re-embedded from the stored crops and
audio); that is not implemented yet and is refused with a clear error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from m3graph.errors import InvalidInputError, M3GraphError
from m3graph.graphdb.executor import Executor
from m3graph.schema.migrations import _vector_params, memory_index_statement
from m3graph.settings import Settings

if TYPE_CHECKING:  # the caller loads the model: the store layer never imports the embedding layer
    from m3graph.embedding import TextEmbedder

Kind = Literal["text", "face", "voice"]
KINDS: tuple[Kind, ...] = ("text", "face", "voice")
_INDEX = {"text": "memory_embedding", "face": "face_centroid", "voice": "voice_centroid"}


class ReembedNotImplementedError(M3GraphError):
    """Re-embedding this kind of entity is not available yet."""


@dataclass(frozen=True)
class ReembedSummary:
    kind: Kind
    model: str
    dim: int
    embedded: int  # nodes embedded by this run
    total: int
    index_recreated: bool


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
    ex.schema(memory_index_statement(ex), **_vector_params(settings, "memory_embedding"))
    ex.schema("schema/await_indexes", timeout_s=600)
    return ReembedSummary("text", model, dim, embedded, total, recreated)


def reembed(ex: Executor, settings: Settings, kind: Kind, embedder: TextEmbedder | None = None,
            batch_size: int = 256, progress: Callable[[int, int], None] | None = None) -> ReembedSummary:
    if kind != "text":
        raise ReembedNotImplementedError(
            f"re-embedding {kind} entities is not implemented yet (only --kind text); a graph built with another "
            f"{kind} model needs a separate database for now")
    if embedder is None:
        raise InvalidInputError("re-embedding text needs the new model's embedder (m3graph.embedding.text_embedder)")
    return reembed_text(ex, settings, embedder, batch_size, progress)


__all__ = ["KINDS", "ReembedNotImplementedError", "ReembedSummary", "index_dimension", "reembed"]
