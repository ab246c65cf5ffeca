"""Per-clip progress on the `Clip` node: the one store the CLI, the workers, MCP and the explorer read.

A clip moves ``planned → perceived → resolved → memorized``. *Resolve* (clip, identities, meta-clip vote) is
one transaction that also sets ``resolved``, so a resolve either happened with its state or not at all; a
failed one is recorded as ``resolve_failed`` and leaves the graph as it was. *Memorize* (the clip's memories
and memory votes) is replaceable: its write sets ``memorized`` in the same transaction, and a failure is
recorded as ``memorize_failed`` with the reason while the clip's previous memories stay as they were.

Moves that only record work done outside the graph (planned, perceived) are guarded so they never undo a
later state; the transactional moves (resolved, memorized) and the failures always apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from m3graph.graphdb.executor import Executor, Tx
from m3graph.graphdb.types import ClipInfo


class ClipState(StrEnum):
    PLANNED = "planned"
    PERCEIVED = "perceived"
    RESOLVED = "resolved"
    MEMORIZED = "memorized"
    RESOLVE_FAILED = "resolve_failed"
    MEMORIZE_FAILED = "memorize_failed"


# A clip in one of these has its identities in the graph: later clips of its video may resolve.
RESOLVED_STATES = frozenset({ClipState.RESOLVED, ClipState.MEMORIZED, ClipState.MEMORIZE_FAILED})
_BEFORE_PERCEIVED = [ClipState.PLANNED.value]


@dataclass(frozen=True)
class ClipProgress:
    source_id: str
    clip_index: int
    state: ClipState | None  # None: a clip that no ingestion wrote (an import, a test fixture)
    reason: str | None
    at: datetime | None

    @property
    def resolved(self) -> bool:
        return self.state in RESOLVED_STATES


def set_state_tx(tx: Tx, source_id: str, clip_index: int, state: ClipState, reason: str | None = None,
                 only_from: Sequence[str] | None = None) -> bool:
    """Sets the state inside a running transaction; False when the clip is missing or the guard refused."""
    return set_states_tx(tx, [(source_id, clip_index)], state, reason, only_from) == 1


def set_states_tx(tx: Tx, clips: Sequence[tuple[str, int]], state: ClipState, reason: str | None = None,
                  only_from: Sequence[str] | None = None) -> int:
    """Sets the state of many clips in one statement (a bulk import, a plan); returns how many were set."""
    rows = tx.run("clip/set_state", clips=[{"source_id": v, "clip_index": c} for v, c in clips], state=state.value,
                  reason=reason, only_from=None if only_from is None else list(only_from))
    return len(rows)


def set_state(ex: Executor, source_id: str, clip_index: int, state: ClipState, reason: str | None = None) -> bool:
    """Records a failure or an explicit move; always applies to an existing clip."""
    return ex.write_tx(lambda tx: set_state_tx(tx, source_id, clip_index, state, reason), label="clip_state")


def plan_tx(tx: Tx, clips: Sequence[ClipInfo], video_name: str | None = None) -> None:
    """Creates the planned clips of a submission (or keeps them as they are): progress is visible from the start.

    The clip's properties are the ones resolve writes later (one builder, `ClipInfo.upsert_params`), so planning
    a clip that is already resolved or memorized changes nothing.
    """
    tx.run("graph/upsert_clip", clips=[clip.upsert_params(video_name) for clip in clips])
    set_states_tx(tx, [(clip.source_id, clip.clip_index) for clip in clips], ClipState.PLANNED, None, only_from=[])


def plan(ex: Executor, clips: Sequence[ClipInfo], video_name: str | None = None) -> None:
    if clips:
        ex.write_tx(lambda tx: plan_tx(tx, clips, video_name), label="plan_clips")


def mark_perceived(ex: Executor, source_id: str, clip_index: int) -> bool:
    """Perception output is on disk; a clip already further along keeps its state."""
    return ex.write_tx(lambda tx: set_state_tx(tx, source_id, clip_index, ClipState.PERCEIVED, None,
                                               only_from=_BEFORE_PERCEIVED), label="clip_perceived")


def states(ex: Executor, source_id: str) -> list[ClipProgress]:
    out = []
    for row in ex.read("clip/states", source_id=source_id):
        ms = row["state_ms"]
        out.append(ClipProgress(
            source_id=source_id, clip_index=int(row["clip_index"]),
            state=ClipState(row["state"]) if row["state"] in ClipState._value2member_map_ else None,
            reason=row["reason"], at=datetime.fromtimestamp(ms / 1000, UTC) if ms is not None else None))
    return out


def unresolved_before(ex: Executor, source_id: str, clip_index: int) -> list[int]:
    """Earlier clips of the video that are not resolved yet (missing, planned, perceived or resolve_failed)."""
    done = {p.clip_index for p in states(ex, source_id) if p.resolved}
    return [i for i in range(clip_index) if i not in done]
