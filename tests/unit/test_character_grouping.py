"""The pure half of character grouping (`m3graph.graphdb.characters`), without a server: how face/voice entities
group into characters from their votes, and which character id each group keeps.

`refresh_characters` reads the votes from the graph, calls these functions and writes their result; the graph tier
(tests/graph/test_characters.py, test_manual_votes.py) checks the round trip, these the rules themselves.
"""

from __future__ import annotations

from m3graph.graphdb.characters import Edge, apply_manual_votes, assign_ids, group_argmax, group_components

# faces 1, 2, 3; voices 11, 12, 13
ENTITIES = [(1, "face"), (2, "face"), (3, "face"), (11, "voice"), (12, "voice"), (13, "voice")]


def _sorted(groups: list[set[int]]) -> list[list[int]]:
    return sorted(sorted(g) for g in groups)


# ---------------------------------------------------------------------------------------------- arg-max grouping


def test_a_voice_joins_the_face_it_has_most_votes_with() -> None:
    edges = [Edge(1, 11, 2), Edge(2, 11, 5), Edge(1, 12, 1)]
    assert _sorted(group_argmax(ENTITIES, edges, min_votes=1)) == [[1, 12], [2, 11], [3], [13]]


def test_a_tie_goes_to_the_older_face() -> None:
    for edges in ([Edge(2, 11, 3), Edge(1, 11, 3)], [Edge(1, 11, 3), Edge(2, 11, 3)]):
        assert _sorted(group_argmax(ENTITIES, edges, min_votes=1)) == [[1, 11], [2], [3], [12], [13]]


def test_a_voice_under_the_minimum_votes_stays_alone() -> None:
    edges = [Edge(1, 11, 1), Edge(2, 12, 2)]
    assert _sorted(group_argmax(ENTITIES, edges, min_votes=2)) == [[1], [2, 12], [3], [11], [13]]


def test_one_wrong_vote_cannot_merge_two_faces() -> None:
    """Two faces share a voice (one right, one wrong vote): the voice joins one face, the faces stay apart."""
    edges = [Edge(1, 11, 4), Edge(2, 11, 1), Edge(2, 12, 3)]
    assert _sorted(group_argmax(ENTITIES, edges, min_votes=1)) == [[1, 11], [2, 12], [3], [13]]


def test_a_speaker_is_its_own_character_and_a_vote_for_a_missing_face_is_ignored() -> None:
    entities = [(1, "face"), (11, "voice"), (21, "speaker")]
    assert _sorted(group_argmax(entities, [Edge(9, 11, 5)], min_votes=1)) == [[1], [11], [21]]


# ---------------------------------------------------------------------------------------------- components (CO_OCCURS)


def test_components_follow_votes_but_never_join_faces_seen_together() -> None:
    """Faces 1 and 2 co-occur (CO_OCCURS): voice 11 links to both, and goes with the stronger link only."""
    edges = [Edge(1, 11, 2), Edge(2, 11, 3), Edge(2, 12, 1), Edge(3, 13, 1)]
    assert _sorted(group_components(ENTITIES, edges, cannot=[(1, 2)])) == [[1], [2, 11, 12], [3, 13]]


def test_without_a_cannot_link_components_chain_through_a_shared_voice() -> None:
    edges = [Edge(1, 11, 2), Edge(2, 11, 3)]
    assert _sorted(group_components(ENTITIES, edges, cannot=[])) == [[1, 2, 11], [3], [12], [13]]


# ---------------------------------------------------------------------------------------------- manual votes


def test_a_manual_different_takes_the_voice_out_and_the_face_keeps_the_rest() -> None:
    kinds = dict(ENTITIES)
    out = apply_manual_votes([{1, 11, 12}], kinds, [(1, 11, "different")])
    assert _sorted(out) == [[1, 12], [11]]
    # whichever id is smaller: the voice leaves, never the face
    out = apply_manual_votes([{4, 5, 6}], {4: "voice", 5: "face", 6: "voice"}, [(5, 4, "different")])
    assert _sorted(out) == [[4], [5, 6]]


def test_a_manual_same_unites_even_two_faces_unless_a_different_forbids_it() -> None:
    kinds = dict(ENTITIES)
    assert _sorted(apply_manual_votes([{1}, {2}, {3}], kinds, [(1, 2, "same")])) == [[1, 2], [3]]
    votes = [(1, 2, "same"), (2, 11, "different")]
    assert _sorted(apply_manual_votes([{1, 11}, {2}], kinds, votes)) == [[1, 11], [2]]


# ---------------------------------------------------------------------------------------------- character ids


def test_on_a_merge_the_oldest_id_survives_and_the_other_is_retired_into_it() -> None:
    chosen, survivors = assign_ids([{1, 2, 11}], {1: 20, 2: 10, 11: 20})
    assert chosen == [10]
    assert survivors == {20: 10}


def test_on_a_split_the_larger_part_keeps_the_id() -> None:
    current = {1: 10, 11: 10, 12: 10}
    assert assign_ids([{1}, {11, 12}], current) == ([None, 10], {})
    assert assign_ids([{11, 12}, {1}], current) == ([10, None], {})


def test_on_an_even_split_the_part_with_the_oldest_member_keeps_the_id() -> None:
    current = {1: 10, 2: 10, 11: 10, 12: 10}
    assert assign_ids([{2, 12}, {1, 11}], current) == ([None, 10], {})


def test_an_older_character_chooses_first_and_the_younger_takes_its_next_group() -> None:
    """Undoing a move gives the ids back: 20's best group is taken by 10, so 20 keeps the other group it holds."""
    current = {1: 10, 2: 10, 11: 20, 12: 20, 13: 20}
    chosen, survivors = assign_ids([{1, 2, 11, 12}, {13}], current)
    assert chosen == [10, 20]
    assert survivors == {}


def test_new_groups_get_no_id_here() -> None:
    assert assign_ids([{1}, {11}], {1: None, 11: None}) == ([None, None], {})
