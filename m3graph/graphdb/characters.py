"""Characters: groups of face/voice entities that are one person, with ids that stay stable.

Grouping rules (reference §3.6 describes the research code's, whose max-vote filter never takes effect):

* ``argmax`` (default): each voice joins the face it has the most votes with (ties: the older face), if it
  has at least ``min_votes``; faces never merge with each other. A single wrong vote therefore cannot merge
  two people whose voices have stronger evidence elsewhere.
* ``components`` (reference-compatible): union over every SAME_AS edge, strongest first, skipping any union
  that would put two faces seen in the same frame into one character.

Stable ids: an old character goes to the new group holding most of its members (oldest characters choose
first). On a merge the oldest id survives and the others become its `aliases`; on a split the larger part
keeps the id and the other parts get new ids, except a part that was merged away earlier: it takes its old id
back (`revive_aliases`). Undoing a manual vote restores ids exactly: each goes to the group holding the members
it had before the merge (`origins`), so an old id never ends up naming the person it had been merged with.
Only the neighbourhood of the entities that changed is recomputed, under a global lock, inside the caller's
transaction, and the names of the characters it wrote follow their new members (`Character.name`,
`m3graph.graphdb.names`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from m3graph.graphdb.executor import Tx
from m3graph.graphdb.names import refresh_character_names
from m3graph.settings import CharacterMode, Settings


@dataclass(frozen=True)
class Edge:
    face: int
    voice: int
    votes: int


def group_argmax(entities: Sequence[tuple[int, str]], edges: Iterable[Edge], min_votes: int) -> list[set[int]]:
    best: dict[int, Edge] = {}
    for e in edges:
        cur = best.get(e.voice)
        if e.votes >= min_votes and (cur is None or (e.votes, -e.face) > (cur.votes, -cur.face)):
            best[e.voice] = e
    # Faces and speakers anchor groups (a speaker is its own character unless a vote or configuration joins it).
    groups: dict[int, set[int]] = {eid: {eid} for eid, kind in entities if kind != "voice"}
    for eid, kind in entities:
        if kind != "voice":
            continue
        edge = best.get(eid)
        if edge is not None and edge.face in groups:
            groups[edge.face].add(eid)
        else:
            groups[eid] = {eid}
    return list(groups.values())


def group_components(entities: Sequence[tuple[int, str]], edges: Iterable[Edge],
                     cannot: Iterable[tuple[int, int]]) -> list[set[int]]:
    members: dict[int, set[int]] = {eid: {eid} for eid, _ in entities}
    root: dict[int, int] = {eid: eid for eid, _ in entities}
    faces_of: dict[int, set[int]] = {eid: ({eid} if kind == "face" else set()) for eid, kind in entities}
    forbidden = {frozenset(p) for p in cannot}

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    for e in sorted(edges, key=lambda e: (-e.votes, e.face, e.voice)):
        if e.face not in root or e.voice not in root:
            continue
        a, b = find(e.face), find(e.voice)
        if a == b or any(frozenset((x, y)) in forbidden for x in faces_of[a] for y in faces_of[b]):
            continue
        keep, drop = min(a, b), max(a, b)
        root[drop] = keep
        members[keep] |= members.pop(drop)
        faces_of[keep] |= faces_of.pop(drop)
    return [members[r] for r in members]


def apply_manual_votes(groups: Sequence[set[int]], kinds: dict[int, str],
                       votes: Iterable[tuple[int, int, str]]) -> list[set[int]]:
    """Manual votes (one verdict per pair, the newest) override the model's grouping.

    "different" first separates a pair the model put together (the non-face side leaves, so a face keeps the
    voices the model gave it); "same" then unites the two groups, whatever their kinds (even two faces),
    unless that would put a "different" pair together again.
    """
    votes = list(votes)
    different = {frozenset((a, b)) for a, b, v in votes if v == "different"}
    out = [set(g) for g in groups]
    for pair in sorted(different, key=sorted):
        a, b = sorted(pair)
        ga = next((g for g in out if a in g), None)
        if ga is None or b not in ga:
            continue
        mover = a if kinds.get(b) == "face" and kinds.get(a) != "face" else b
        ga.discard(mover)
        out.append({mover})
    for a, b, verdict in sorted(votes):
        if verdict != "same":
            continue
        ga = next((g for g in out if a in g), None)
        gb = next((g for g in out if b in g), None)
        if ga is None or gb is None or ga is gb:
            continue
        if any(frozenset((x, y)) in different for x in ga for y in gb):
            continue
        ga |= gb
        out = [g for g in out if g is not gb]
    return [g for g in out if g]


def assign_ids(groups: Sequence[set[int]], current: dict[int, int | None]) -> tuple[list[int | None], dict[int, int]]:
    """Returns a char id (None = needs a new one) per group, and retired id → surviving id."""
    overlap: dict[int, dict[int, int]] = defaultdict(dict)  # old char → group index → shared members
    for gi, group in enumerate(groups):
        for eid in group:
            char = current.get(eid)
            if char is not None:
                overlap[char][gi] = overlap[char].get(gi, 0) + 1
    chosen: list[int | None] = [None] * len(groups)
    retired: dict[int, int] = {}
    for char in sorted(overlap):
        # Best group first; when an older character already took it, the next group holding any of its
        # members keeps the id (undoing a move gives ids back); only a character left with none is retired.
        prefs = sorted(overlap[char], key=lambda g: (overlap[char][g], -min(groups[g])), reverse=True)
        free = next((g for g in prefs if chosen[g] is None), None)
        if free is not None:
            chosen[free] = char
        else:
            retired[char] = prefs[0]
    # A character is retired only when all its groups were taken, so every retired id has a survivor.
    survivors = {old: taker for old, gi in retired.items() if (taker := chosen[gi]) is not None}
    return chosen, survivors


def revive_aliases(groups: Sequence[set[int]], missing: Iterable[int], entities: Iterable[dict[str, Any]]
                   ) -> dict[int, tuple[int, int]]:
    """Groups that need an id and can take back one merged away: group index -> (id, character holding it).

    A member remembers the character it was last moved out of (`prev`); when that id is now an alias of the
    member's character, the group split off is that person again (a merge undone), so `/character/<old id>`
    shows them rather than resolving, as an alias, to the person they had been merged with. The id most of the
    group's members came from wins (ties: the smaller id); each id is given back once.
    """
    info = {row["id"]: row for row in entities}
    out: dict[int, tuple[int, int]] = {}
    used: set[int] = set()
    for gi in missing:
        counts: dict[tuple[int, int], int] = defaultdict(int)
        for eid in groups[gi]:
            row = info.get(eid) or {}
            prev, holder = row.get("prev"), row.get("char_id")
            if prev is not None and holder is not None and prev in (row.get("aliases") or ()):
                counts[(prev, holder)] += 1
        for (prev, holder), _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0])):
            if prev not in used:
                out[gi] = (prev, holder)
                used.add(prev)
                break
    return out


def _scope(tx: Tx, seeds: Iterable[int]) -> list[int]:
    scope, frontier = set(seeds), set(seeds)
    while frontier:
        found: set[int] = set()
        for row in tx.run("characters/neighbourhood", ids=sorted(frontier)):
            found.update(row["linked"])
        frontier = found - scope
        scope |= found
    return sorted(scope)


def origins(entities: Iterable[dict[str, Any]]) -> dict[int, int | None]:
    """Each entity's character before it was merged away: the id it was moved out of when that id is now an
    alias of its character, else its character."""
    return {row["id"]: row["prev"] if row.get("prev") is not None and row["prev"] in (row.get("aliases") or ())
            else row["char_id"] for row in entities}


def refresh_characters(tx: Tx, settings: Settings, seeds: Iterable[int], *, restore_merged: bool = False) -> int:
    """Recomputes the characters around `seeds` (entity ids); returns how many groups changed.

    `restore_merged` (undoing a manual vote): ids go to groups by where their members were before they were
    merged away, so undoing a merge gives both people their old ids back, instead of the larger part taking the
    surviving id and the other part a new one.
    """
    tx.run("graph/lock", name="characters")
    ids = _scope(tx, seeds)
    if not ids:
        return 0
    state = tx.single("characters/state", ids=ids)
    assert state is not None
    entities = sorted((row["id"], row["kind"]) for row in state["entities"])
    current = {row["id"]: row["char_id"] for row in state["entities"]}
    edges = [Edge(e["face"], e["voice"], int(e["votes"])) for e in state["edges"]]
    manual = [(m["a"], m["b"], m["verdict"]) for m in state.get("manual") or []]
    different = {frozenset((a, b)) for a, b, v in manual if v == "different"}
    edges = [e for e in edges if frozenset((e.face, e.voice)) not in different]  # a manual "different" wins
    if settings.memory.character_mode is CharacterMode.ARGMAX:
        groups = group_argmax(entities, edges, settings.memory.min_votes)
    else:
        groups = group_components(entities, edges, [tuple(p) for p in state["cannot"]])
    groups = apply_manual_votes(groups, dict(entities), manual)
    groups.sort(key=min)
    chosen, survivors = assign_ids(groups, origins(state["entities"]) if restore_merged else current)
    live = {c for c in current.values() if c is not None}
    survivors = {old: new for old, new in survivors.items() if old in live}
    holders = {row["prev"]: row["char_id"] for row in state["entities"]
               if row.get("prev") in (row.get("aliases") or ())}
    revived = {gi: (char, holders[char]) for gi, char in enumerate(chosen) if char is not None and char not in live}
    revived |= revive_aliases(groups, [i for i, c in enumerate(chosen) if c is None], state["entities"])
    for gi, (old_id, _) in revived.items():
        chosen[gi] = old_id
    missing = [i for i, c in enumerate(chosen) if c is None]
    if missing:
        first = tx.one("graph/allocate_ids", counter="character", n=len(missing))["first"]
        for offset, gi in enumerate(missing):
            chosen[gi] = first + offset
    rows, changed = [], 0
    for gi, group in enumerate(groups):
        char = chosen[gi]
        if any(current.get(eid) != char for eid in group):
            changed += 1
        rows.append({"char_id": char, "members": sorted(group)})
    if changed or survivors:
        tx.run("characters/write", groups=rows,
               retired=[{"old": old, "new": new} for old, new in sorted(survivors.items())],
               revived=[{"id": old_id, "holder": holder} for old_id, holder in sorted(revived.values())])
        # Members moved: a character's name is its members' name facts (m3graph.graphdb.names).
        refresh_character_names(tx, [c for c in chosen if c is not None])
    return changed
