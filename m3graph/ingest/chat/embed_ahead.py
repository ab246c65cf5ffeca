"""A conversation's memory vectors, embedded one session ahead of the session being written.

Why: ingestion has two costs of similar size, the embedder (CPU in this process, on every core it is given) and the
session writes (one transaction per session, mostly the Neo4j server's work on one core, the client waiting). Run
one after the other, every core idles through every write; here the embedder works on the next sessions while the
current one is written (issue 40: ingestion that keeps up).

What a caller can rely on:
* every text was checked (`MemoryIn`) before this starts (ingest.py does that with a placeholder vector), so the
  vectors are the only thing left that may be refused; the first session's vectors are ready, and checked, before
  anything is written, so a model that cannot load or returns garbage writes nothing;
* a text is embedded once per ingestion, however many memories carry it (a repeated "Thanks!" turn), and its
  vector is the one the embedder gives it alone (the embedder's contract), so the order of work changes nothing;
* with `ahead=False` every vector is computed and checked before the first write (one embedder call over all
  texts): the all-or-nothing order of earlier versions, for callers that need it and for measuring the difference
  (bench/ingest_throughput.py).
A failure while embedding a later session (the process runs out of memory, say) leaves the sessions before it
written, each whole (one transaction each); re-running the ingest writes the rest, as for a grown file.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

from m3graph.embedding import TextEmbedder
from m3graph.errors import InvalidInputError


@contextmanager
def stage(times: dict[str, float] | None, name: str) -> Iterator[None]:
    """Adds the block's wall time to `times[name]` (a caller's stage profile; nothing when `times` is None)."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        if times is not None:
            times[name] = times.get(name, 0.0) + time.perf_counter() - t0


class SessionVectors:
    """The vectors of each session's memories, in session order; `get(i)` waits for session i's."""

    def __init__(self, embedder: TextEmbedder, texts: Sequence[Sequence[str]], names: Sequence[str], *,
                 ahead: bool = True, times: dict[str, float] | None = None) -> None:
        """`texts`: each session's memory texts; `names`: each session as an error should name it."""
        self._embedder = embedder
        self._texts = [list(t) for t in texts]
        self._names = list(names)
        self._times = times
        self._known: dict[str, np.ndarray] = {}  # text -> vector: read and written only by the embedding thread
        self._thread: ThreadPoolExecutor | None = None
        self._futures: list[Future[np.ndarray]] = []
        if ahead and len(self._texts) > 1:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="m3graph-embed-ahead")
            self._futures = [self._thread.submit(self._embed, t) for t in self._texts]
        else:
            every = [t for session in self._texts for t in session]
            rows = self._embed(every)
            k = 0
            for session in self._texts:
                done: Future[np.ndarray] = Future()
                done.set_result(rows[k:k + len(session)])
                self._futures.append(done)
                k += len(session)
            for i in range(len(self._texts)):  # every vector checked before the first write
                self._check(i, self._futures[i].result(), written=False)

    def _embed(self, texts: list[str]) -> np.ndarray:
        """`texts`' vectors, embedding only those not embedded before in this ingestion."""
        new = [t for t in dict.fromkeys(texts) if t not in self._known]
        if new:
            with stage(self._times, "embed"):
                rows = np.asarray(self._embedder.embed(new), dtype=np.float32)
            if rows.ndim != 2 or len(rows) != len(new):
                raise InvalidInputError(f"embedder returned {len(rows)} vectors for {len(new)} memories")
            self._known.update(zip(new, rows, strict=True))
        if not texts:
            return np.zeros((0, self._embedder.dim), dtype=np.float32)
        return np.stack([self._known[t] for t in texts])

    def get(self, i: int) -> np.ndarray:
        """Session i's vectors, one row per memory, checked (finite, not all zeros)."""
        with stage(self._times, "wait"):
            rows = self._futures[i].result()
        self._check(i, rows, written=i > 0)
        return rows

    def _check(self, i: int, rows: np.ndarray, written: bool) -> None:
        bad = [j for j, row in enumerate(rows) if not np.isfinite(row).all() or not float(np.dot(row, row)) > 0.0]
        if bad:
            done = "the sessions before it were written" if written else "nothing was written"
            raise InvalidInputError(f"{self._names[i]}: memory {self._texts[i][bad[0]][:60]!r}: embedding: the "
                                    f"embedder returned NaN, infinity or zeros; {done}")

    def close(self) -> None:
        """Stops embedding what is not needed any more (after a failure); waits for the running call."""
        for f in self._futures:
            f.cancel()
        if self._thread is not None:
            self._thread.shutdown(wait=True, cancel_futures=True)
