"""Manual identity votes: a person says two entities are (or are not) the same individual.

A manual vote beats every model vote: "same" merges the two characters whatever the entity kinds (even two
faces, which model votes never merge), "different" keeps them apart (dropping a model SAME_AS edge between
them). Votes are nodes, so the time, note and an undo stay in the history; the newest active vote on a pair
wins, and undoing it gives the grouping back to the model (m3graph.graphdb.characters recomputes it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.graphdb.characters import refresh_characters
from m3graph.graphdb.executor import Executor, Tx
from m3graph.settings import Settings

Verdict = Literal["same", "different"]


class VoteRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    vote_id: int
    a: int
    b: int
    verdict: Verdict
    note: str | None = None
    source: str = "manual"
    created_at: str
    undone_at: str | None = None


def vote_identity(ex: Executor, settings: Settings, a: int, b: int, verdict: Verdict, note: str | None = None,
                  source: str = "manual") -> VoteRecord:
    if verdict not in ("same", "different"):
        raise InvalidInputError(f"identity vote verdict {verdict!r}: expected 'same' or 'different'")
    if a == b:
        raise InvalidInputError(f"identity vote between entity {a} and itself")
    lo, hi = sorted((int(a), int(b)))

    def work(tx: Tx) -> VoteRecord:
        vote_id = tx.one("graph/allocate_ids", counter="identity_vote", n=1)["first"]
        row = tx.single("votes/create", vote_id=vote_id, a=lo, b=hi, verdict=verdict, note=note, source=source)
        if row is None:
            raise NotFoundError(f"identity vote: entity {a} or {b} is not a face, voice or speaker")
        refresh_characters(tx, settings, [lo, hi])
        return VoteRecord(**dict(row))

    return ex.write_tx(work, label="vote_identity")


def undo_vote(ex: Executor, settings: Settings, vote_id: int) -> bool:
    """Returns False when the vote was already undone (undo is idempotent)."""

    def work(tx: Tx) -> bool:
        row = tx.single("votes/undo", vote_id=int(vote_id))
        if row is None:
            raise NotFoundError(f"identity vote {vote_id} does not exist")
        refresh_characters(tx, settings, [row["a"], row["b"]], restore_merged=True)
        return bool(row["undone"])

    return ex.write_tx(work, label="undo_vote")


def vote_history(ex: Executor, entity_id: int | None = None, char_id: int | None = None) -> list[VoteRecord]:
    """Every vote (undone ones included) about an entity, or about any member of a character."""
    if (entity_id is None) == (char_id is None):
        raise InvalidInputError("vote_history needs exactly one of entity_id or char_id")
    if char_id is not None:
        rows = ex.read("votes/character_members", char_id=int(char_id))
        ids = list(rows[0]["ids"]) if rows else []
        if not ids:
            raise NotFoundError(f"character {char_id} does not exist")
    else:
        assert entity_id is not None  # exactly one of the two, checked above
        ids = [int(entity_id)]
    return [VoteRecord(**dict(r)) for r in ex.read("votes/history", ids=ids)]
