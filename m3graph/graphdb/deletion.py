"""Deleting a clip, a video or a character with everything derived from it, in one transaction each.

Nothing is left orphaned: evidence nodes (and the embeddings on them) go, memories lose the clip's support
(and disappear when no support is left), votes from the clip are withdrawn, exemplar sets and centroids are
recomputed from the evidence that remains, entities with no evidence left are deleted (with the identity votes
about them), and characters are recomputed around everything that changed. A deleted video's lock nodes go with
it, and the deletion that leaves the graph without any data also removes the global locks and id counters
(`delete/unused_bookkeeping`): while data remains they stay, since a counter keeps its ids from being reused.
Files shared in a conversation session go with the last session holding them (`graphdb/files.py`): the deletes
return the stored copies' paths, which the store removes after the transaction commits.

`StoredCopies` is the check around the whole delete: before it, the stored copies the graph names (cuts, crops,
snippets, shared files' copies) and which of them exist; after it, any still there are removed, and those that
were missing are reported as an error. The graph part is not held back for a missing file (a person must stay
deletable when their crops were lost), but it is never silent: a missing copy usually means a data directory or
store other than the one the media was written to, where the copies still are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from m3graph.errors import NotFoundError
from m3graph.graphdb.characters import refresh_characters
from m3graph.graphdb.executor import Executor, Tx
from m3graph.graphdb.facts import refresh_slots
from m3graph.graphdb.files import drop_orphans, release_clip_files
from m3graph.graphdb.identity import EntityState
from m3graph.graphdb.tags import parse_tags
from m3graph.graphdb.types import clip_key
from m3graph.settings import Settings
from m3graph.storage import MissingCopiesError, key_of, media_store


def _repair_entities(tx: Tx, settings: Settings, ids: list[int]) -> list[int]:
    """Rebuilds exemplar sets from the remaining candidates; returns the ids that still have evidence.

    The exemplar set is, by construction, the best `cap` candidates by (quality, key), so rebuilding it from
    what remains gives exactly the set a run without the deleted clip would have produced.
    """
    updates, dead = [], []
    for row in tx.run("delete/entity_state", ids=ids):
        if row["evidence"] == 0:
            dead.append(row["entity_id"])
            continue
        cap = settings.identity.max_face_exemplars if row["kind"] == "face" else settings.identity.max_voice_exemplars
        best = sorted(row["candidates"], key=lambda r: (-r["quality"], r["key"]))[:cap]
        if not best or [r["key"] for r in best] == row["obs"]:
            continue
        state = EntityState(row["entity_id"], np.asarray([r["embedding"] for r in best], dtype=np.float64),
                            [r["quality"] for r in best], [r["key"] for r in best])
        updates.append(state.row())
    if updates:
        tx.run("delete/set_exemplars", entities=updates)
    if dead:
        tx.run("delete/entity_pairs", ids=dead)  # no clip keeps a vote or co-occurrence pair naming them
        tx.run("delete/entities", ids=dead)
    return [i for i in ids if i not in set(dead)]


def delete_clip_tx(tx: Tx, settings: Settings, source_id: str, clip_index: int) -> list[str]:
    """Deletes the clip; returns the stored copies of shared files that no other session holds."""
    ckey = clip_key(source_id, clip_index)
    if tx.single("graph/get_clip", source_id=source_id, clip_index=clip_index) is None:
        raise NotFoundError(f"clip {ckey} does not exist")
    tx.run("graph/lock", name=f"memory:{source_id}")
    affected = tx.one("delete/clip_entities", clip_key=ckey)["entity_ids"]
    held = tx.run("delete/clip_memories", clip_key=ckey, source_id=source_id)
    files = release_clip_files(tx, ckey)
    memory_ids = [r["memory_id"] for r in held]
    if memory_ids:
        tx.run("memory/retract", clip_key=ckey, memory_ids=memory_ids)
    tx.run("delete/clip", clip_key=ckey)
    stored = drop_orphans(tx, files)
    refresh_slots(tx, source_id, [r["slot_key"] for r in held])  # an older fact may hold again
    survivors = _repair_entities(tx, settings, sorted(affected)) if affected else []
    if survivors:
        refresh_characters(tx, settings, survivors)
    tx.run("delete/orphan_characters")
    tx.run("delete/unused_bookkeeping")
    return stored


def delete_clip(ex: Executor, settings: Settings, source_id: str, clip_index: int) -> list[str]:
    return ex.write_tx(lambda tx: delete_clip_tx(tx, settings, source_id, clip_index), label="delete_clip")


def delete_video(ex: Executor, settings: Settings, source_id: str) -> tuple[int, list[str]]:
    """Deletes clip by clip (each atomic, so an interrupted delete can simply be re-run), then the video; returns
    the number of clips and the stored copies of shared files that went with them."""
    clips = [r["clip_index"] for r in ex.read("delete/video_clips", source_id=source_id)]
    found = ex.read("graph/video_exists", source_id=source_id)
    if not clips and not found:
        raise NotFoundError(f"video {source_id} does not exist")
    stored: list[str] = []
    for index in clips:
        stored += delete_clip(ex, settings, source_id, index)

    def finish(tx: Tx) -> None:
        tx.run("delete/video", source_id=source_id)
        tx.run("delete/unused_bookkeeping")

    ex.write_tx(finish, label="delete_video")
    return len(clips), stored


_PHOTO_FACES = re.compile(r"; faces: (?:<face_\d+>(?:, )?)+$")


def untag_photo(text: str, entity_ids: set[int]) -> str | None:
    """A photo surrogate without the deleted entities' face tags (the ``; faces: <face_1>, <face_2>`` list that
    ingestion appends), or None when the text names them anywhere else (then the memory goes, as every memory
    that mentions a deleted person does)."""
    found = _PHOTO_FACES.search(text)
    head, tail = (text[:found.start()], found.group(0)) if found else (text, "")
    if any(eid in entity_ids for _, eid in parse_tags(head)):
        return None
    kept = [f"<face_{eid}>" for _, eid in parse_tags(tail) if eid not in entity_ids]
    return head + (f"; faces: {', '.join(kept)}" if kept else "")


def _untag_photos(tx: Tx, memory_ids: list[str], entity_ids: list[int]) -> list[str]:
    """Rewrites the photo surrogates that name the person only in their face list; returns the ids of the
    memories to delete (all the others)."""
    gone = set(entity_ids)
    rows = []
    for r in tx.run("delete/character_photo_memories", memory_ids=memory_ids):
        text = untag_photo(r["text"], gone)
        if text is None:
            continue
        tags = parse_tags(text)
        rows.append({"memory_id": r["memory_id"], "text": text, "entity_ids": sorted({eid for _, eid in tags}),
                     "mentions": [{"id": eid, "position": i} for i, (_, eid) in enumerate(tags)]})
    if rows:
        tx.run("delete/untag_memories", rows=rows)
    kept = {r["memory_id"] for r in rows}
    return [m for m in memory_ids if m not in kept]


def delete_character(ex: Executor, settings: Settings, char_id: int) -> dict[str, int]:
    """Deletes a person: their entities, evidence (face crops and snippets go after the commit, by the store),
    identity votes, and every memory that mentions them, except the surrogates of shared photos a session still
    holds: those stay, without the person's face tag (the photo is the session's; the face was the person's)."""

    def work(tx: Tx) -> dict[str, int]:
        tx.run("graph/lock", name="characters")
        scope = tx.single("delete/character_scope", char_id=char_id)
        if scope is None or not scope["entity_ids"]:
            raise NotFoundError(f"character {char_id} does not exist")
        supporting = tx.one("clip/supporting_clips", memory_ids=scope["memory_ids"])["clip_keys"]
        doomed = _untag_photos(tx, scope["memory_ids"], scope["entity_ids"])
        tx.run("delete/entity_pairs", ids=scope["entity_ids"])  # before their edges go: they find the clips
        tx.run("delete/character", entity_ids=scope["entity_ids"], memory_ids=doomed)
        for source_id in sorted({s["source_id"] for s in scope["slots"]}):  # older facts may hold again
            refresh_slots(tx, source_id, [s["slot_key"] for s in scope["slots"] if s["source_id"] == source_id])
        if supporting:  # the deleted memories' text must leave the clips' search documents too
            tx.run("clip/refresh_search_text", clip_keys=supporting)
        neighbours = sorted(set(scope["neighbours"]) - set(scope["entity_ids"]))
        if neighbours:
            refresh_characters(tx, settings, neighbours)
        tx.run("delete/orphan_characters")
        tx.run("delete/unused_bookkeeping")
        return {"entities": len(scope["entity_ids"]), "memories": len(doomed),
                "photos_untagged": len(scope["memory_ids"]) - len(doomed)}

    return ex.write_tx(work, label="delete_character")


SHOWN = 5  # missing copies named in the error; the count says how many more


@dataclass(frozen=True)
class StoredCopies:
    """The stored copies a delete must remove, as the graph names them, and which were in the store before it."""

    settings: Settings
    what: str  # "clip v#3", "video v", "character 4": for the error message
    expected: frozenset[str]
    present: frozenset[str]

    @classmethod
    def of(cls, settings: Settings, what: str, refs: list[str | None]) -> StoredCopies:
        """Reads the store once, before the delete (refs the graph holds: keys or legacy host paths; others, such
        as an http URL, name nothing this store holds and are left out)."""
        keys = frozenset(k for k in (key_of(r, settings.data_dir) for r in refs) if k is not None)
        return cls(settings, what, keys, frozenset(media_store(settings).existing(keys)))

    @classmethod
    def of_clips(cls, ex: Executor, settings: Settings, source_id: str, clip_index: int | None = None) -> StoredCopies:
        """A clip's copies (`clip_index` given) or every clip's of a video."""
        refs = ex.read("delete/clip_copies", source_id=source_id, clip_index=clip_index)[0]["refs"]
        what = f"video {source_id}" if clip_index is None else f"clip {clip_key(source_id, clip_index)}"
        return cls.of(settings, what, refs)

    @classmethod
    def of_character(cls, ex: Executor, settings: Settings, char_id: int) -> StoredCopies:
        """A person's face crops and voice snippets."""
        refs = [r["uri"] for r in ex.read("delete/character_files", char_id=char_id)]
        return cls.of(settings, f"character {char_id}", refs)

    def settle(self) -> None:
        """After the graph delete and its file removal: removes any expected copy still in the store (a clip's
        imported crops, say), then raises `MissingCopiesError` naming the copies that were missing before the
        delete or that could not be removed. Re-running it is harmless: what is gone stays gone."""
        store = media_store(self.settings)
        left = store.existing(self.expected)
        if left:
            store.delete_keys(sorted(left))
            left = store.existing(left)
        missing = sorted(self.expected - self.present)
        if not missing and not left:
            return
        where = str(self.settings.data_dir) if store.is_local else self.settings.storage.url
        problems = []
        if missing:
            more = f" and {len(missing) - SHOWN} more" if len(missing) > SHOWN else ""
            problems.append(f"{len(missing)} stored copies it names were missing from {where}: "
                            f"{', '.join(missing[:SHOWN])}{more} (is this the data directory they were written to?)")
        if left:
            problems.append(f"{len(left)} could not be removed: {', '.join(sorted(left)[:SHOWN])}")
        raise MissingCopiesError(f"{self.what} was deleted from the graph, but " + "; ".join(problems))
