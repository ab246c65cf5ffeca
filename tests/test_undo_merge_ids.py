# ruff: noqa: F811  (fixtures imported from graph_fixtures are requested by name)
"""Undoing a merge gives the merged-away character id back to the person it named (issue 21, item 7).

Before, the old id stayed an alias of the survivor after the undo, so `/character/<old id>` (and search scoped
by `<character_old>`) resolved to the other person, while the restored person got a brand-new id.
"""

from __future__ import annotations

from graph_fixtures import graph, memory_graph, rows  # noqa: F401
from test_characters import _cast, _chars, _vote_3_to_1

from m3graph.graphdb.characters import revive_aliases
from m3graph.graphdb.store import MemoryGraph


def test_undoing_a_same_vote_restores_the_old_id(graph: MemoryGraph) -> None:
    c = _cast(graph)
    _vote_3_to_1(graph, c)
    before = _chars(graph, c)
    kept, merged_away = min(before[1], before[12]), max(before[1], before[12])
    vote = graph.vote_identity(12, 1, "same")
    merged = _chars(graph, c)
    assert set(merged.values()) == {kept}
    (char,) = rows(graph, "MATCH (c:Character {char_id: $id}) RETURN c.aliases AS aliases", id=kept)
    assert merged_away in char["aliases"]
    assert graph.undo_vote(vote.vote_id)
    assert _chars(graph, c) == before  # the same ids as before the merge, not a fresh one
    (char,) = rows(graph, "MATCH (c:Character {char_id: $id}) RETURN c.aliases AS aliases", id=kept)
    assert merged_away not in char["aliases"]
    # the old id names its own person again, wherever ids are resolved
    restored = [e for e, ch in before.items() if ch == merged_away]
    assert graph.search.entities_of([merged_away]) == sorted(restored)
    assert merged_away not in [x for r in rows(graph, "MATCH (c:Character) RETURN c.aliases AS a") for x in r["a"]]


def test_revive_aliases_picks_the_id_most_members_came_from() -> None:
    groups = [{1, 13}, {12, 14, 15}]
    entities = [{"id": 1, "char_id": 5, "prev": None, "aliases": [7, 9]},
                {"id": 13, "char_id": 5, "prev": None, "aliases": [7, 9]},
                {"id": 12, "char_id": 5, "prev": 9, "aliases": [7, 9]},
                {"id": 14, "char_id": 5, "prev": 7, "aliases": [7, 9]},
                {"id": 15, "char_id": 5, "prev": 9, "aliases": [7, 9]}]
    assert revive_aliases(groups, [1], entities) == {1: (9, 5)}
    # an id that is no longer an alias (a live character elsewhere) is never taken
    live = [dict(e, aliases=[]) for e in entities]
    assert revive_aliases(groups, [1], live) == {}
