"""The bge embedder's bulk path (issue 40): a call of several texts is spread over a pool of threads, each text
still run alone, so every vector is exactly the one a text gets embedded alone on one thread; a repeated text is
run once; a single text (a search query) runs on the calling thread."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from m3graph.embedding_onnx import BgeEmbedder
from m3graph.settings import BGE_TEXT_MODEL, TextModelConfig

REPO = Path(__file__).resolve().parents[2]
BGE = TextModelConfig(model=BGE_TEXT_MODEL, models_dir=REPO / ".m3graph" / "text-models")
TEXTS = ["Caroline went to an LGBTQ support group on Tuesday.", "",
         "Melanie painted a lake at sunrise, then ran a charity race with her kids. " * 40,  # over 512 tokens
         "ok", "The quarterly earnings report showed a sharp fall in revenue.",
         "User: could you review the Flask routes for the budget tracker? " * 6, "Thanks!",
         "Assistant: sure, here is the schema with an index on user_id and created_at.", "Thanks!"]


class _Recorder:
    """Wraps an embedder's single-text run: which texts (by token count) ran, and on which threads."""

    def __init__(self, embedder: BgeEmbedder) -> None:
        self.runs: list[tuple[int, str]] = []
        self._lock = threading.Lock()
        original = embedder._run

        def run(ids: list[int], mask: list[int], types: list[int]) -> Any:
            with self._lock:
                self.runs.append((len(ids), threading.current_thread().name))
            return original(ids, mask, types)

        embedder._run = run  # type: ignore[method-assign]


@pytest.fixture(scope="module")
def serial() -> BgeEmbedder:
    embedder = BgeEmbedder(BGE, workers=1)
    embedder.load()
    return embedder


def test_pooled_vectors_equal_each_text_embedded_alone(serial: BgeEmbedder) -> None:
    pooled = BgeEmbedder(BGE, workers=3)
    alone = np.stack([serial.embed([t])[0] for t in TEXTS])
    for got in (pooled.embed(TEXTS), serial.embed(TEXTS), pooled.embed(list(reversed(TEXTS)))[::-1]):
        assert got.shape == (len(TEXTS), 384)
        assert np.array_equal(got, alone)  # bit for bit: no batch, no other thread, changes a vector
    assert np.array_equal(pooled.embed_query(TEXTS[:3]), np.stack([serial.embed_query([t])[0] for t in TEXTS[:3]]))


def test_a_repeated_text_runs_once_and_bulk_work_leaves_the_calling_thread() -> None:
    pooled = BgeEmbedder(BGE, workers=2)
    recorder = _Recorder(pooled)
    vectors = pooled.embed(TEXTS)
    assert len(recorder.runs) == len(set(TEXTS)) == len(TEXTS) - 1
    assert np.array_equal(vectors[6], vectors[8])
    assert {name for _, name in recorder.runs} <= {f"m3graph-embed_{i}" for i in range(2)}
    lengths = [n for n, _ in recorder.runs]
    assert lengths[0] == max(lengths)  # longest first, so the threads finish together


def test_a_single_text_runs_on_the_calling_thread() -> None:
    pooled = BgeEmbedder(BGE, workers=2)
    recorder = _Recorder(pooled)
    pooled.embed_query(["What did Melanie paint?"])
    pooled.embed(["Thanks!", "Thanks!"])
    assert [name for _, name in recorder.runs] == [threading.current_thread().name] * 2


def test_workers_default_to_the_cores_divided_by_intra_op_threads() -> None:
    from m3graph.embedding_onnx import available_cpus

    assert BgeEmbedder(BGE).workers == max(1, available_cpus())
    assert BgeEmbedder(BGE.model_copy(update={"threads": 64})).workers == 1
    assert BgeEmbedder(BGE, workers=5).workers == 5
    assert BgeEmbedder(BGE.model_copy(update={"ingest_threads": 3})).workers == 3  # the setting, as given


_FORKED: list[BgeEmbedder] = []


def _embed_in_child() -> np.ndarray:
    return _FORKED[0].embed(TEXTS[:4])


def test_a_forked_child_embeds_on_a_pool_of_its_own() -> None:
    import multiprocessing

    pooled = BgeEmbedder(BGE, workers=2)
    before = pooled.embed(TEXTS[:4])  # the parent's pool exists now; a forked copy of it has no threads
    _FORKED[:] = [pooled]
    with multiprocessing.get_context("fork").Pool(1) as child:
        after = child.apply_async(_embed_in_child).get(timeout=120)
    assert np.array_equal(after, before)
