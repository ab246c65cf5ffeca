"""The Bloom perspective in docs/ is the generated one, and its search phrases are consistent.

Bloom itself cannot run here; every phrase's Cypher is a named query (m3graph/cypher/bloom/) that
tests/graph/test_cypher_files.py EXPLAINs on the real server as a READ query.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from m3graph.cypher import QUERIES
from m3graph.explore.bloom import CATEGORIES, SEARCH_PHRASES, perspective

DOC = Path(__file__).resolve().parents[2] / "docs" / "bloom" / "m3graph.perspective.json"


def test_the_committed_perspective_is_the_generated_one() -> None:
    assert json.loads(DOC.read_text()) == perspective()


def test_every_search_phrase_is_a_read_query_with_matching_parameters() -> None:
    for template in perspective()["templates"]:
        phrase_params = set(re.findall(r"\$(\w+)", template["text"]))
        cypher_params = set(re.findall(r"\$(\w+)", template["cypher"]))
        declared = {p["name"] for p in template["params"]}
        assert phrase_params == cypher_params == declared, template["name"]
        assert not template["isUpdateQuery"]
    for _, name, _ in SEARCH_PHRASES:
        assert QUERIES[name].mode == "read"


def test_categories_cover_the_memory_graph_labels() -> None:
    shown = {c["labels"][0] for c in perspective()["categories"]}
    assert {"Video", "Clip", "Memory", "Face", "Voice", "Character"} <= shown == set(CATEGORIES)
    assert all(c["properties"][0]["isCaption"] and c["caption"] == ["name"] for c in perspective()["categories"])
