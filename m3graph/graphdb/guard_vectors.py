"""Which property keys hold vectors, and the output filter that never lets one through.

Why: face and voice descriptors are biometric data and text embeddings invert to text; the guarded Cypher tool
is text, so no vector value may leave it in any shape (floats, ints, strings, slices). The plan check
(`guard_plan`) refuses any query that names a vector key or reads properties dynamically; this filter is the
second layer: every node, relationship and map in a result loses its vector keys whatever their value's shape,
and any list of more than 32 floats (an embedding laundered into a list) becomes a placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import neo4j

from m3graph.cypher import query
from m3graph.schema.migrations import VECTOR_INDEXES

FLOAT_LIST_MAX = 32
# Labels that hold vectors in the product's graph model (docs/graph-model.md); the schema adds any label a
# vector index is defined on.
VECTOR_LABELS = frozenset({"Face", "Voice", "Memory", "FaceObs", "Utterance"})
VECTOR_KEYS = frozenset({"embedding", "embeddings", "centroid", "centroid_unit", "exemplars"})
# A name ENDING in "embedding(s)" is a vector key (`clip_embedding`); one that merely contains it is not
# (`embedding_model` holds the model's name, an analyst's question).
_VECTOR_KEY = re.compile(r"(?:^|_)embeddings?$|^exemplar|^centroid(_unit)?$", re.I)
# Index names are identifiers in 2026's SEARCH clause (`VECTOR INDEX memory_embedding`), not property keys.
VECTOR_INDEX_NAMES = frozenset(VECTOR_INDEXES)


class VectorPolicy:
    """The vector keys and labels of one database: the fixed list plus what its vector indexes declare."""

    def __init__(self, keys: Iterable[str] = (), labels: Iterable[str] = (), index_names: Iterable[str] = ()):
        self.keys = frozenset(k.lower() for k in (*VECTOR_KEYS, *keys))
        self.labels = frozenset((*VECTOR_LABELS, *labels))
        self.index_names = frozenset(n.lower() for n in (*VECTOR_INDEX_NAMES, *index_names))

    def is_vector_key(self, key: str) -> bool:
        return key.lower() in self.keys or bool(_VECTOR_KEY.search(key))

    def scrub(self, value: Any) -> Any:
        """Plain JSON values with every vector key removed, at any depth, whatever the shape of its value."""
        if isinstance(value, neo4j.graph.Node):
            return {"labels": sorted(value.labels), **self._props(value.items())}
        if isinstance(value, neo4j.graph.Relationship):
            return {"type": value.type, **self._props(value.items())}
        if isinstance(value, neo4j.graph.Path):
            return {"nodes": [self.scrub(n) for n in value.nodes],
                    "relationships": [self.scrub(r) for r in value.relationships]}
        if isinstance(value, list | tuple):
            floats = sum(isinstance(x, float) for x in value)
            if len(value) > FLOAT_LIST_MAX and floats > FLOAT_LIST_MAX and all(
                    x is None or isinstance(x, float | int) and not isinstance(x, bool) for x in value):
                return f"<{len(value)} floats omitted>"
            return [self.scrub(x) for x in value]
        if isinstance(value, dict):
            return self._props(value.items())
        if value is None or isinstance(value, bool | int | float | str):
            return value
        return str(value)

    def _props(self, items: Iterable[tuple[str, Any]]) -> dict[str, Any]:
        return {k: self.scrub(v) for k, v in items if not self.is_vector_key(str(k))}


def load_policy(tx: neo4j.ManagedTransaction | neo4j.Transaction) -> VectorPolicy:
    """The fixed policy widened by every vector index the server reports (its labels and its vector key: the first
    property; the others of a 2026 index are its filter properties, such as `video_id`)."""
    rows = tx.run(query("guard/vector_indexes").text).data()
    return VectorPolicy(keys=[r["properties"][0] for r in rows if r["properties"]],
                        labels=[label for r in rows for label in r["labels"] or []],
                        index_names=[r["name"] for r in rows])
