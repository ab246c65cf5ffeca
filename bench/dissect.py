"""Where a product call spends its time: per named query, measured around the executor.

`QueryTimer` wraps `Executor._execute` and `Tx.run` for the duration of a `with` block, so every named query a
product method runs is timed end to end as the client sees it (parameter packing, the server's work, the
round trip and result decoding). It changes no behaviour and is used only in separate, untimed passes.
"""

from __future__ import annotations

import time
from collections import defaultdict
from types import TracebackType
from typing import Any

import numpy as np

from m3graph.graphdb import executor as executor_module


class QueryTimer:
    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = defaultdict(list)
        self._orig_run: Any = None
        self._orig_execute: Any = None

    def __enter__(self) -> QueryTimer:
        tx_cls, ex_cls = executor_module.Tx, executor_module.Executor
        self._orig_run, self._orig_execute = tx_cls.run, ex_cls._execute
        orig_run, orig_execute, samples = self._orig_run, self._orig_execute, self.samples

        def run(tx: Any, name: str, /, **params: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return orig_run(tx, name, **params)
            finally:
                samples[name].append(time.perf_counter() - t0)

        def execute(ex: Any, name: str, params: dict[str, Any], routing: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return orig_execute(ex, name, params, routing)
            finally:
                samples[name].append(time.perf_counter() - t0)

        tx_cls.run = run  # type: ignore[method-assign]
        ex_cls._execute = execute  # type: ignore[method-assign]
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        executor_module.Tx.run = self._orig_run  # type: ignore[method-assign]
        executor_module.Executor._execute = self._orig_execute  # type: ignore[method-assign]

    def report(self, calls: int) -> dict[str, dict[str, float]]:
        """Per query: how often it ran per product call, and its median and total per call in ms."""
        out = {}
        for name, s in sorted(self.samples.items(), key=lambda kv: -sum(kv[1])):
            arr = np.asarray(s) * 1000.0
            out[name] = {"runs_per_call": len(s) / calls, "p50_ms": float(np.median(arr)),
                         "ms_per_call": float(arr.sum() / calls)}
        return out
