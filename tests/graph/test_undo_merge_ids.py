"""Undoing a merge gives the merged-away character id back to the person it named (issue 21, item 7).

Before, the old id stayed an alias of the survivor after the undo, so `/character/<old id>` (and search scoped
by `<character_old>`) resolved to the other person, while the restored person got a brand-new id.
"""

from __future__ import annotations

from m3graph.graphdb.characters import origins, revive_aliases
from m3graph.graphdb.store import MemoryGraph
from tests.graph.test_characters import _cast, _chars, _equivalence, _vote_3_to_1
from tests.helpers.graph import rows


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
    assert origins(entities) == {1: 5, 13: 5, 12: 9, 14: 7, 15: 9}
    assert origins(live) == {1: 5, 13: 5, 12: 5, 14: 5, 15: 5}


def test_undo_gives_each_id_back_even_when_the_merged_away_part_is_larger(graph: MemoryGraph) -> None:
    """face_12 (younger id) with voice_13 is the larger part; after merging face_1 into it and undoing, face_1's
    id still names face_1, not the larger group that the surviving id would otherwise follow."""
    c = _cast(graph)
    for clip in (0, 1, 2):  # voice_13 belongs with face_12 this time
        _equivalence(graph, clip, c.face_12, c.voice_13, c.gen)
    before = _chars(graph, c)
    assert before[12] == before[13] != before[1]
    vote = graph.vote_identity(1, 12, "same")
    assert len(set(_chars(graph, c).values())) == 1
    graph.undo_vote(vote.vote_id)
    assert _chars(graph, c) == before
