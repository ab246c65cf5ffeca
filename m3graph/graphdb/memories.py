"""Writing one clip's memories and equivalence votes as one idempotent step.

Episodic memories are always inserted (ids are the clip key plus their order). Semantic memories are
deduplicated against the video's semantic memories that mention every entity the new one mentions (cos > 0.85
reinforces the best match instead of inserting, reference §3.5): an exact scan while the video has few semantic
memories, the vector index beyond `search.exact_scan_limit`. Support is the
*set* of clips that produced a statement, so a retried or replayed clip changes nothing, and re-memorizing a
clip with different output replaces that clip's contribution: memories it no longer produces lose its
support, and its votes are replaced. Mentions are structural `MENTIONS` edges, validated against existing
entities before anything is written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.fact_versions import single_valued, slot_properties
from m3graph.graphdb.characters import refresh_characters
from m3graph.graphdb.executor import Tx
from m3graph.graphdb.facts import refresh_slots
from m3graph.graphdb.tags import is_equivalence, parse_tags
from m3graph.graphdb.types import EquivalenceVote, MemoryIn, MemoryWriteSummary, clip_key
from m3graph.settings import Settings


def equivalence_votes(text: str) -> list[EquivalenceVote]:
    """`Equivalence: <face_x>, <voice_y>` → one face–voice vote per (face, voice) pair it names."""
    if not is_equivalence(text):
        return []
    tags = parse_tags(text)
    faces = [n for k, n in tags if k == "face"]
    voices = [n for k, n in tags if k == "voice"]
    return [EquivalenceVote(face_id=f, voice_id=v, source="memory") for f in faces for v in voices]


def _mentioned(memories: Sequence[MemoryIn], votes: Sequence[EquivalenceVote]) -> dict[str, list[int]]:
    """The face, voice and speaker ids that the memories' tags and the votes name."""
    tags = [(k, n) for m in memories for k, n in parse_tags(m.text)]
    faces = {n for k, n in tags if k == "face"} | {v.face_id for v in votes}
    voices = {n for k, n in tags if k == "voice"} | {v.voice_id for v in votes}
    speakers = {n for k, n in tags if k == "speaker"}
    return {"face_ids": sorted(faces), "voice_ids": sorted(voices), "speaker_ids": sorted(speakers)}


def _refuse_unknown(mentioned: dict[str, list[int]], found: set[tuple[str, int]]) -> None:
    wanted = {(kind.removesuffix("_ids"), n) for kind, ids in mentioned.items() for n in ids}
    unknown = sorted(wanted - found)
    if unknown:
        names = ", ".join(f"<{k}_{n}>" for k, n in unknown)
        raise InvalidInputError(f"memories mention entities that do not exist: {names}; nothing was written")


def _check_entities(tx: Tx, memories: Sequence[MemoryIn], votes: Sequence[EquivalenceVote]) -> None:
    mentioned = _mentioned(memories, votes)
    found = {(r["kind"], r["entity_id"]) for r in tx.run("memory/entities_exist", **mentioned)}
    _refuse_unknown(mentioned, found)


def _may_merge(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two close statements may be one memory (m3graph.fact_versions): always when either has no slot;
    in one slot only with the same value, polarity and change mark ("Mia's favourite fruit is mango" and "... is
    apple" are 0.9 cosine apart and still two facts); across slots only as a paraphrase of one subject's liking
    the same value ("likes tea" / "enjoys tea": slots that hold many values), never two subjects ("Mia's favourite
    fruit" / "Tom's favourite fruit") nor a one-value attribute ("favourite fruit is mango" / "likes mangoes")."""
    if a["slot_key"] is None or b["slot_key"] is None:
        return True
    if a["slot_key"] != b["slot_key"] and (a["subject_key"] != b["subject_key"] or single_valued(a["slot_key"])
                                           or single_valued(b["slot_key"])):
        return False
    return all(a[k] == b[k] for k in ("value_key", "negated", "changed"))


def _row(source_id: str, memory_id: str, m: MemoryIn, order: int, refresh: bool) -> dict[str, Any]:
    tags = parse_tags(m.text)
    return {**slot_properties(source_id, m.kind, m.text, is_equivalence(m.text)),
        "memory_id": memory_id, "kind": m.kind, "text": m.text, "order": order, "embedding": list(m.embedding),
        "is_equivalence": is_equivalence(m.text), "entity_ids": [n for _, n in tags],
        "mentions": [{"kind": k, "id": n, "position": i} for i, (k, n) in enumerate(tags)],
        "start_s": m.start_s, "end_s": m.end_s, "source_ids": list(m.source_ids), "refresh": refresh,
        **m.times.properties(),
    }


def write_clip_memories(
    tx: Tx,
    settings: Settings,
    source_id: str,
    clip_index: int,
    memories: Sequence[MemoryIn],
    votes: Sequence[EquivalenceVote] = (),
    vote_sources: Sequence[str] = ("memory",),
    new_clip: bool = False,
) -> MemoryWriteSummary:
    """Writes the clip's memories and votes (see the module docstring). `new_clip`: the caller created the clip in
    this transaction, so no memory holds its support yet and its prior contribution is not read (memory/prepare:
    reading it scans every memory of the source, which grows with a conversation)."""
    ckey = clip_key(source_id, clip_index)
    dim = settings.memory.text_dim
    bad = [i for i, m in enumerate(memories) if len(m.embedding) != dim]
    if bad:
        raise InvalidInputError(f"memories {bad} of clip {ckey} have embeddings that are not {dim}-d")
    all_votes = list(votes) + [v for m in memories for v in equivalence_votes(m.text)]
    mentioned = _mentioned(memories, all_votes)
    semantic = [m for m in memories if m.kind == "semantic"]
    ready = tx.single("memory/prepare", source_id=source_id, clip_key=ckey, new_clip=new_clip,
                      count_semantic=bool(semantic), **mentioned)
    assert ready is not None  # the statement always returns its one row
    if not ready["clip_found"]:
        raise NotFoundError(f"clip {ckey} does not exist; register it before writing memories")
    _refuse_unknown(mentioned, {(e["kind"], e["entity_id"]) for e in ready["entities"]})
    prior_rows = [r for r in ready["prior"] if r["memory_id"] is not None]
    prior = {r["memory_id"] for r in prior_rows}

    rows: list[dict[str, Any]] = []
    for order, m in enumerate(x for x in memories if x.kind == "episodic"):
        rows.append(_row(source_id, f"{ckey}#e{order}", m, order, refresh=True))
    threshold = settings.memory.semantic_dedup_threshold
    items = [_row(source_id, "", m, len(rows) + i, refresh=True) | {"idx": i} for i, m in enumerate(semantic)]
    matches: dict[int, str] = {}
    if items:
        query_items = [{k: it[k] for k in ("idx", "embedding", "entity_ids", "is_equivalence")} for it in items]
        n_semantic = ready["n_semantic"]
        if n_semantic <= settings.search.exact_scan_limit:
            found = tx.run("memory/dedup_exact", items=query_items, min_score=(1 + threshold) / 2, source_id=source_id)
        else:
            found = tx.run("memory/dedup_candidates", items=query_items, k=settings.memory.dedup_candidates,
                           min_score=(1 + threshold) / 2, source_id=source_id)
        for r in found:  # rows come best-first per item; a fact with another value is never a restatement
            if _may_merge(items[r["item"]], r):
                matches.setdefault(r["item"], r["memory_id"])
    vecs = np.asarray([it["embedding"] for it in items], dtype=np.float64).reshape(len(items), dim)
    if len(items):
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    created = reinforced = 0
    for i, it in enumerate(items):
        target = matches.get(i)
        for j in range(i):  # earlier statements of this same clip are not in the index yet
            if target is not None:
                break
            prev = items[j]
            if (float(vecs[i] @ vecs[j]) > threshold and prev["is_equivalence"] == it["is_equivalence"]
                    and set(it["entity_ids"]) <= set(prev["entity_ids"]) and _may_merge(it, prev)
                    and (it["entity_ids"] or not prev["entity_ids"])):
                target = prev["memory_id"]
        if target is None:
            digest = hashlib.sha1(it["text"].encode("utf-8")).hexdigest()[:12]
            it["memory_id"] = f"{ckey}#s{digest}"
            created += 1
            rows.append({k: v for k, v in it.items() if k != "idx"})
        else:
            it["memory_id"] = target
            reinforced += 1
            rows.append({k: v for k, v in it.items() if k != "idx"} | {"refresh": False})
    # A statement repeated verbatim inside one clip maps to one row.
    unique = {r["memory_id"]: r for r in reversed(rows)}
    rows = sorted(unique.values(), key=lambda r: r["order"])

    if rows:
        tx.run("memory/upsert", clip_key=ckey, source_id=source_id, clip_index=clip_index, rows=rows)
        fresh = [r for r in rows if r["refresh"] and r["slot_key"]]
        if fresh:
            tx.run("facts/link_things", rows=[r | {"source_id": source_id} for r in fresh])
    stale = sorted(prior - {r["memory_id"] for r in rows})
    if stale:
        tx.run("memory/retract", clip_key=ckey, memory_ids=stale)
    refresh_slots(tx, source_id, [r["slot_key"] for r in rows] + [r["slot_key"] for r in prior_rows],
                  prune=bool(stale))  # only a retracted memory can leave a named thing without facts
    tx.run("clip/refresh_search_text", clip_keys=[ckey, *_moved_to(prior_rows, set(stale), ckey)])
    changed = 0
    if votes_may_change(ready, all_votes):
        changed = set_clip_votes(tx, settings, ckey, all_votes, vote_sources)
    return MemoryWriteSummary(
        episodic=sum(1 for m in memories if m.kind == "episodic"), semantic_created=created,
        semantic_reinforced=reinforced, equivalence_votes=len({(v.face_id, v.voice_id) for v in all_votes}),
        characters_changed=changed)


def votes_may_change(ready: dict[str, Any], votes: Sequence[EquivalenceVote]) -> bool:
    """Whether memory/votes could change anything: the clip has votes to write or pairs it voted on before.

    Why skip it otherwise: a chat session writes no votes, and one statement fewer per session is a few ms of
    server time per session (memory/prepare already set the empty `vote_pairs` memory/votes would set)."""
    return bool(votes) or bool(ready["vote_pairs"])


def _moved_to(prior_rows: Sequence[dict[str, Any]], stale: set[str], ckey: str) -> list[str]:
    """Clips a retracted memory may have moved to (its earliest remaining supporting clip): their documents change.

    A memory moves only if `ckey` was its first clip; refreshing a clip whose memories did not change is harmless.
    """
    moved = set()
    for r in prior_rows:
        remaining = [k for k in (r["support"] or []) if k != ckey]
        if r["memory_id"] in stale and remaining:
            moved.add(min(remaining, key=lambda k: int(k.rsplit("#", 1)[1])))
    return sorted(moved)


def set_clip_votes(tx: Tx, settings: Settings, ckey: str, votes: Sequence[EquivalenceVote],
                   sources: Sequence[str]) -> int:
    """Makes the clip's evidence from `sources` exactly `votes`; returns how many characters changed."""
    vote_rows = sorted({(v.face_id, v.voice_id, v.source) for v in votes})
    bad_sources = {s for _, _, s in vote_rows} - set(sources)
    if bad_sources:
        raise InvalidInputError(f"votes with sources {sorted(bad_sources)} passed to a writer of {list(sources)}")
    pairs = tx.run("memory/votes", clip_key=ckey, sources=list(sources),
                   votes=[{"face_id": f, "voice_id": v, "source": s} for f, v, s in vote_rows])
    seeds = sorted({p["face_id"] for p in pairs} | {p["voice_id"] for p in pairs})
    return refresh_characters(tx, settings, seeds) if seeds else 0


def record_clip_votes(tx: Tx, settings: Settings, source_id: str, clip_index: int,
                      votes: Sequence[EquivalenceVote], source: str | Sequence[str]) -> int:
    """Sets the clip's votes of `source` (one source or several, e.g. the resolve step's meta-clip and on-screen
    votes in one write) to exactly `votes`."""
    ckey = clip_key(source_id, clip_index)
    if tx.single("graph/get_clip", source_id=source_id, clip_index=clip_index) is None:
        raise NotFoundError(f"clip {ckey} does not exist; register it before recording votes")
    _check_entities(tx, [], votes)
    return set_clip_votes(tx, settings, ckey, votes, (source,) if isinstance(source, str) else tuple(source))
