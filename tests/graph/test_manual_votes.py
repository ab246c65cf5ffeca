"""Manual identity votes override model votes, move characters with stable ids, undo, and keep history."""

from __future__ import annotations

import pytest

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.graphdb.store import MemoryGraph
from tests.graph.test_characters import _cast, _chars, _vote_3_to_1
from tests.helpers.graph import rows


def test_different_fixes_a_wrong_merge_and_undo_restores_it(graph: MemoryGraph) -> None:
    c = _cast(graph)
    _vote_3_to_1(graph, c)
    before = _chars(graph, c)
    assert before[1] == before[13]  # the model joined voice 13 to face 1
    vote = graph.vote_identity(1, 13, "different", note="that voice is the waiter")
    after = _chars(graph, c)
    assert after[13] != after[1]
    assert after[1] == before[1]  # the face keeps its character id
    assert after[13] == after[12]  # the voice falls back to its next-best face
    assert graph.undo_vote(vote.vote_id) is True
    assert graph.undo_vote(vote.vote_id) is False  # idempotent
    assert _chars(graph, c) == before
    (hist,) = graph.vote_history(13)
    assert (hist.verdict, hist.note, hist.source) == ("different", "that voice is the waiter", "manual")
    assert hist.undone_at is not None


def test_same_merges_two_faces_and_the_newest_vote_wins(graph: MemoryGraph) -> None:
    c = _cast(graph)
    _vote_3_to_1(graph, c)
    before = _chars(graph, c)
    assert before[1] != before[12]  # model votes never merge two faces
    graph.vote_identity(12, 1, "same")
    merged = _chars(graph, c)
    assert merged[1] == merged[12] == merged[13] == min(before[1], before[12])  # the oldest id survives
    (char,) = rows(graph, "MATCH (c:Character {char_id: $id}) RETURN c.aliases AS aliases", id=merged[1])
    assert max(before[1], before[12]) in char["aliases"]
    graph.vote_identity(1, 12, "different", note="twins")
    apart = _chars(graph, c)
    assert apart[1] != apart[12]
    history = graph.vote_history(char_id=apart[12])
    assert [h.verdict for h in history] == ["same", "different"]
    assert all(h.undone_at is None for h in history)


def test_bad_votes_are_refused_and_write_nothing(graph: MemoryGraph) -> None:
    c = _cast(graph)
    with pytest.raises(NotFoundError, match="999"):
        graph.vote_identity(c.face_1, 999, "same")
    with pytest.raises(InvalidInputError, match="itself"):
        graph.vote_identity(c.face_1, c.face_1, "same")
    with pytest.raises(InvalidInputError, match="verdict"):
        graph.vote_identity(c.face_1, c.voice_13, "maybe")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match="12345"):
        graph.undo_vote(12345)
    assert rows(graph, "MATCH (v:IdentityVote) RETURN count(v) AS n")[0]["n"] == 0
