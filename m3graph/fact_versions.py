"""Facts that change (the pure rules): each semantic memory's slot, and which version of a slot holds when.

Why recomputed and not updated in place: clips are memorized out of order (parallel workers, `memorize
--failed`, re-ingestion) and deleted; a rule applied once per write would depend on that order. Instead every
write or delete that touches a slot recomputes the slot's whole history from what the graph holds, ordered by
EVENT time (where the clip sits in its source), so any order of writes gives the same graph, re-memorizing a clip
changes nothing, and deleting the clip that held the newer fact makes the older one current again. Nothing is
deleted by supersession: an old version gets an end to its validity and a `SUPERSEDES` edge from its successor
(the edges and validity lists are derived data, rewritten with the slot; the memories are never touched).

The slot of a memory is `m3graph.statements.parse_statement` of its text (speaker tags removed: "Ann
<speaker_3>'s favourite fruit is mango" is Ann's), scoped to its source: two sources never share a slot (one
conversation's "Ann" is not another's). Only semantic, non-equivalence memories get a slot; episodic memories
(turns, what was seen and said) are never superseded. A statement the parser cannot read has no slot and is
never superseded (over-invalidation, graphiti#1728, hides true facts; a missed update only leaves both visible).

The rule within one slot, walking its assertions in event order (a memory is asserted in each clip supporting
it, so a fact said again later is newer again):
- same value and polarity as a current version: both stay current (a restatement);
- same value, opposite polarity, and the newer statement does not mark a change ("I have never used Rust" vs
  "my Rust service went live"; `Statement.changed` is False): a CONTRADICTS edge, both stay current and are
  surfaced with their dates, nothing is picked silently;
- anything else (another value; or a polarity flip that says it changed: "no longer", "now", "anymore"): the
  newer version supersedes every current one that states something else (one stating the same stays current).

An analyst's correction (`manual_state` on the memory, `m3graph.graphdb.facts.correct_fact`) is one more input
of the walk, so it obeys the same any-order rule:
- "superseded": the memory takes no part in the walk, as if it had never been said: it is never current, holds
  at no point of event time (an `as_of` search never shows it), supersedes nothing, and the version it had
  displaced holds again. Its note reads "superseded by hand".
- "current" (restored): it is walked as usual (it may supersede older versions), but nothing retires it: a newer
  value opens beside it (both current, as with a contradiction) and supersedes only the others.
- cleared: the override is gone and the walk gives exactly the computed state again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from m3graph.statements import Statement, parse_statement

OPEN = 1.0e18  # the end of a validity that has not ended (Neo4j lists hold no nulls)
_SPEAKER_TAG = re.compile(r"\s*<speaker_\d+>")
_ORDER_STEP = 1.0e-4  # memories of one clip that share a start: their order in the clip breaks the tie
MANUAL_NOTE = "superseded by hand"


def statement_of(text: str) -> Statement | None:
    """The statement a memory's text makes, read without its speaker tags (the name before a tag is the subject)."""
    return parse_statement(_SPEAKER_TAG.sub("", text))


def slot_properties(source_id: str, kind: str, text: str, is_equivalence: bool) -> dict[str, Any]:
    """The slot fields one memory row carries into `memory/upsert` (all None for a memory without a slot)."""
    st = statement_of(text) if kind == "semantic" and not is_equivalence else None
    if st is None:
        return {"slot_key": None, "slot_subject": None, "slot_attribute": None, "slot_value": None,
                "subject_key": None, "value_key": None, "negated": None, "changed": None, "value_thing": None,
                "subject_thing": None}
    return {"slot_key": st.slot_key, "slot_subject": st.subject, "slot_attribute": st.attribute,
            "slot_value": st.value, "subject_key": st.subject_key, "value_key": st.value_key,
            "negated": st.negated, "changed": st.changed, "subject_thing": thing_key(source_id, st.subject_key),
            "value_thing": thing_key(source_id, st.value_key)}


def single_valued(slot_key: str) -> bool:
    """Whether a slot holds one value at a time: its key is "subject · attribute" (a many-valued slot's key ends
    with its value, `Statement.slot_key`)."""
    return slot_key.count(" · ") == 1


def thing_key(source_id: str, name_key: str) -> str:
    """A named thing is keyed by its normalised name within its source (documented in docs/graph-model.md)."""
    return f"{source_id}|{name_key}"


@dataclass(frozen=True)
class Assertion:
    """One memory said in one clip: the unit the walk orders."""

    memory_id: str
    order: tuple[float, int, int]  # (position on the source's timeline, clip index, order in the clip)
    at: float | None  # absolute event time (epoch seconds) where the source has dates
    clip_key: str
    value_key: str
    negated: bool
    changed: bool
    label: str  # where, for the reader: "8 May 2023" or "CLIP_3"
    manual: str | None = None  # an analyst's override: "superseded" (never holds) or "current" (never retired)


@dataclass
class Version:
    """What the walk decides for one memory."""

    from_order: list[float] = field(default_factory=list)
    to_order: list[float] = field(default_factory=list)
    from_at: list[float] = field(default_factory=list)
    to_at: list[float] = field(default_factory=list)
    superseded_by: str | None = None
    superseded_note: str | None = None
    supersedes: dict[str, dict[str, Any]] = field(default_factory=dict)
    contradicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    dated: bool = True

    @property
    def current(self) -> bool:
        return bool(self.to_order) and self.to_order[-1] >= OPEN


def walk(assertions: Iterable[Assertion]) -> dict[str, Version]:
    """The versions of ONE slot from its assertions (any order in, the same result out)."""
    events = sorted(assertions, key=lambda a: (a.order, a.memory_id))
    versions: dict[str, Version] = {}
    for a in events:
        if a.manual == "superseded":  # as if never said: no interval, no edges; what it displaced holds again
            versions[a.memory_id] = Version(superseded_note=MANUAL_NOTE)
    events = [a for a in events if a.manual != "superseded"]
    pinned = {a.memory_id for a in events if a.manual == "current"}
    claims: dict[str, tuple[str, bool]] = {}
    current: list[str] = []

    def open_(a: Assertion) -> None:
        v = versions.setdefault(a.memory_id, Version())
        v.from_order.append(a.order[0])
        v.to_order.append(OPEN)
        if a.at is None:
            v.dated = False
        else:
            v.from_at.append(a.at)
            v.to_at.append(OPEN)
        current.append(a.memory_id)

    for a in events:
        claims[a.memory_id] = (a.value_key, a.negated)
        if a.memory_id in current:
            continue  # said again while it holds
        now = {claims[m] for m in current}
        claim = (a.value_key, a.negated)
        if not current or (claim in now and not (a.changed and len(now) > 1)):
            open_(a)
            continue
        if not a.changed and all(value == a.value_key for value, _ in now):
            earlier = list(current)  # the source presents both as true: surfaced, not resolved
            open_(a)
            for m in earlier:
                versions[a.memory_id].contradicts[m] = {"order": a.order[0], "clip_key": a.clip_key}
            continue
        # a restatement of the new claim stays with it, and so does a version restored by hand
        kept = [m for m in current if claims[m] == claim or m in pinned]
        current[:] = [m for m in current if m not in kept]
        for m in current:
            old = versions[m]
            old.to_order[-1] = a.order[0]
            if old.to_at and a.at is not None:
                old.to_at[-1] = a.at
            old.superseded_by = a.memory_id
            old.superseded_note = f"superseded on {a.label}"
        new = versions.setdefault(a.memory_id, Version())
        for m in current:
            new.supersedes[m] = {"order": a.order[0], "clip_key": a.clip_key, "at": a.at}
        current[:] = kept
        open_(a)
    for v in versions.values():
        if not v.dated:
            v.from_at, v.to_at = [], []
        if v.current:
            v.superseded_by = v.superseded_note = None
    return versions


def _epoch(value: Any) -> float | None:
    to_native = getattr(value, "to_native", None)
    native = to_native() if callable(to_native) else value
    return native.timestamp() if isinstance(native, datetime) else None


def _assertion(r: dict[str, Any]) -> Assertion:
    own = r["clip_key"] == r["first_clip"]
    start = r["start_s"] if own and r["start_s"] is not None else r["clip_start"]
    start = float(start if start is not None else 0.0)
    at = _epoch(r["started_at"])
    if at is not None and own and r["start_s"] is not None and r["clip_start"] is not None:
        at += float(r["start_s"]) - float(r["clip_start"])
    order_in_clip = int(r["order_in_clip"] or 0) if own else 0
    when = datetime.fromtimestamp(at, UTC).strftime("%-d %B %Y") if at is not None else f"CLIP_{r['clip_index']}"
    return Assertion(r["memory_id"], (start + _ORDER_STEP * order_in_clip, int(r["clip_index"]), order_in_clip),
                     at, r["clip_key"], r["value_key"] or "", bool(r["negated"]), bool(r["changed"]), when,
                     r.get("manual"))


def version_rows(assertion_rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """`facts/slot_assertions` rows in, `facts/set_versions` rows out: every slot walked on its own."""
    by_slot: dict[str, list[Assertion]] = {}
    for r in assertion_rows:
        by_slot.setdefault(r["slot_key"], []).append(_assertion(r))
    rows = []
    for assertions in by_slot.values():
        for memory_id, v in walk(assertions).items():
            rows.append({"memory_id": memory_id, "current": v.current, "from_order": v.from_order,
                         "to_order": v.to_order, "from_at": v.from_at, "to_at": v.to_at,
                         "superseded_by": v.superseded_by, "note": v.superseded_note,
                         "supersedes": [{"id": k} | e for k, e in sorted(v.supersedes.items())],
                         "contradicts": [{"id": k} | e for k, e in sorted(v.contradicts.items())]})
    return rows


@dataclass(frozen=True)
class VersionView:
    """Which versions of facts a search shows: the current ones (the default), every one, or those valid at a
    point of event time. Memories without a slot (episodic ones, unparsed statements) are always shown.

    `at` (epoch seconds) applies to facts of dated sources; `order` (a position on the timeline of source `video`,
    from an "as of a clip") to that source's facts. A fact the point does not apply to shows its current state.
    `search/ranked` applies the same rule in Cypher (tests/unit/test_fact_rules.py tests this one,
    tests/graph/test_fact_versions.py the Cypher one through real searches).
    """

    all_versions: bool = False
    at: float | None = None
    video: str | None = None
    order: float | None = None

    def params(self) -> dict[str, Any]:
        return {"all_versions": self.all_versions, "as_of_at": self.at, "as_of_video": self.video,
                "as_of_order": self.order}

    def visible(self, m: dict[str, Any]) -> bool:
        if self.all_versions or m.get("slot_key") is None:
            return True
        if self.at is not None and m.get("valid_from_at"):
            return _inside(self.at, m["valid_from_at"], m["valid_to_at"])
        if self.order is not None and m.get("source_id") == self.video and m.get("valid_from_order") is not None:
            return _inside(self.order, m["valid_from_order"], m["valid_to_order"])
        return m.get("current") is not False


def _inside(t: float, starts: Sequence[float], ends: Sequence[float]) -> bool:
    return any(a <= t < b for a, b in zip(starts, ends, strict=False))
