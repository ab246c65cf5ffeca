"""A Neo4j Bloom perspective for the memory graph, generated from one description so docs stay in sync.

Bloom cannot run here (it needs Neo4j Desktop, Aura or the Enterprise plugin), so what is verified is what can
be: the file's structure (tests/unit/test_bloom.py) and that every search phrase's Cypher is a valid READ query on
the real server (they are named queries under m3graph/cypher/bloom/).
Regenerate with `python -m m3graph.explore.bloom > docs/bloom/m3graph.perspective.json`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from m3graph.cypher import QUERIES

# label -> (colour, caption property, shown properties); `name` is set on every node for readable captions.
CATEGORIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "Video": ("#9C755F", "name", ("video_id", "clip_count", "duration_s")),
    "Clip": ("#4E79A7", "name", ("video_id", "clip_index", "start_s", "end_s", "started_at", "state")),
    "Memory": ("#BAB0AC", "name", ("kind", "text", "video_id", "clip_index", "support", "source_ids")),
    "Face": ("#F28E2B", "name", ("entity_id",)),
    "Voice": ("#59A14F", "name", ("entity_id",)),
    "Speaker": ("#76B7B2", "name", ("entity_id", "source_id")),
    "Character": ("#E15759", "name", ("char_id", "aliases", "size")),
    "FaceObs": ("#FFBE7D", "name", ("frame_time_s", "crop_uri", "quality")),
    "Utterance": ("#8CD17D", "name", ("text", "start_s", "end_s", "audio_uri")),
}
RELATIONSHIPS: dict[str, str] = {
    "OF": "#999999", "NEXT": "#4E79A7", "IN_CLIP": "#BAB0AC", "MENTIONS": "#F1CE63", "IS": "#E15759",
    "SAME_AS": "#B07AA1", "CO_OCCURS": "#D37295",
}
# (search phrase, named query under m3graph/cypher/bloom/, parameters (name, type, suggestion label and property))
SEARCH_PHRASES: tuple[tuple[str, str, tuple[tuple[str, str, str, str], ...]], ...] = (
    ("memories of character $id", "bloom/memories_of_character", (("id", "Integer", "Character", "char_id"),)),
    ("clip $n of video $v", "bloom/clip_of_video",
     (("n", "Integer", "Clip", "clip_index"), ("v", "String", "Video", "video_id"))),
    ("who said $text", "bloom/who_said", (("text", "String", "Utterance", "text"),)),
    ("faces and voices of character $id", "bloom/identity_of_character", (("id", "Integer", "Character", "char_id"),)),
    ("timeline of video $v", "bloom/video_timeline", (("v", "String", "Video", "video_id"),)),
)


def _body(name: str) -> str:
    """The query without its comment header: Bloom stores plain Cypher."""
    lines = QUERIES[name].text.splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("//")).strip()


def perspective() -> dict[str, Any]:
    categories = [
        {"id": i + 1, "name": label, "color": colour, "size": 1, "icon": "no-icon", "labels": [label],
         "properties": [{"name": p, "exclude": False, "isCaption": p == caption, "dataType": "String"}
                        for p in (caption, *shown)],
         "caption": [caption], "textSize": 1, "createdAt": 0, "lastEditedAt": 0}
        for i, (label, (colour, caption, shown)) in enumerate(CATEGORIES.items())
    ]
    templates = [
        {"id": f"m3graph-{i + 1}", "name": phrase, "text": phrase, "cypher": _body(query), "description": phrase,
         "isUpdateQuery": False,
         "params": [{"name": n, "dataType": t, "suggestionLabel": lab, "suggestionProp": prop}
                    for n, t, lab, prop in params]}
        for i, (phrase, query, params) in enumerate(SEARCH_PHRASES)
    ]
    return {
        "name": "m3graph memory",
        "version": "2.x",
        "id": "m3graph-memory-perspective",
        "categories": categories,
        "labels": {label: [{"propertyKey": p, "type": "String"} for p in ("name", *shown)]
                   for label, (_, _, shown) in CATEGORIES.items()},
        "relationshipTypes": [{"name": rel, "id": rel, "color": colour, "size": 1}
                              for rel, colour in RELATIONSHIPS.items()],
        "templates": templates,
        "hiddenRelationshipTypes": [],
        "hiddenCategories": [],
        "metadata": {"pathSegments": [], "indexes": []},
    }


if __name__ == "__main__":
    json.dump(perspective(), sys.stdout, indent=2)
    sys.stdout.write("\n")
