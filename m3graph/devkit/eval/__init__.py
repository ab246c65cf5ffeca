"""Evaluation: the M3-Bench annotations, the entailment judge, the question runner and a generated-media set.

Modules import their heavy dependencies (Neo4j, models) lazily, so `m3graph eval m3bench --stats-only` works
on a machine with neither.
"""

from m3graph.devkit.eval.m3bench import (
    CANONICAL_TYPES,
    SPLITS,
    BenchQuestion,
    BenchSplit,
    BenchVideo,
    M3BenchFormatError,
    SplitStats,
    load_m3bench,
    load_split,
    normalize_type,
    parse_timestamp,
)

__all__ = [
    "CANONICAL_TYPES",
    "SPLITS",
    "BenchQuestion",
    "BenchSplit",
    "BenchVideo",
    "M3BenchFormatError",
    "SplitStats",
    "load_m3bench",
    "load_split",
    "normalize_type",
    "parse_timestamp",
]
