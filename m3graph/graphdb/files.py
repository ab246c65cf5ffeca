"""Files shared in conversations, in the graph: `File` nodes keyed by content, and their stored copies.

A `File` is keyed by its SHA-256 (unique, migration 14), so sharing the same bytes again links the node that
exists; each share is a `(:Clip)-[:HAS_FILE {turn_id}]->(:File)` with the name and time it was shared under, the
sharing turn's memory `SHARED` it, and surrogate memories (text standing for the file in search) carry
`file_sha256` and `DESCRIBES` it. The bytes are a content-addressed copy under ``<data_dir>/files/`` (written
by `m3graph.ingest.chat.attachments`). A file is deleted with the last session holding it: the graph first,
then the copy, and only a path inside ``<data_dir>/files/`` is ever removed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.graphdb.executor import Executor, Tx
from m3graph.settings import Settings
from m3graph.storage import fetch, media_store

log = logging.getLogger(__name__)
FILES_ROOT = "files"  # under data_dir (`ingest.chat.attachments.FILES_DIR`)


@dataclass(frozen=True)
class FileLinks:
    """What one session writes about its files (rows for the `files/*` statements)."""

    files: list[dict[str, Any]] = field(default_factory=list)  # one per share: sha256, kind, mime, size, ...
    cites: list[dict[str, Any]] = field(default_factory=list)  # surrogate memory id -> sha256
    shares: list[dict[str, Any]] = field(default_factory=list)  # sharing turn's memory id -> sha256
    faces: list[dict[str, Any]] = field(default_factory=list)  # a photo's face crop uri -> sha256 (its FaceObs)

    def write(self, tx: Tx, clip_key: str) -> None:
        if not self.files:
            return
        tx.run("files/link_session", clip_key=clip_key, files=self.files)
        if self.cites or self.shares or self.faces:
            tx.run("files/cite", clip_key=clip_key, cites=self.cites, shares=self.shares, faces=self.faces)


def release_clip_files(tx: Tx, clip_key: str) -> list[str]:
    """The files of `clip_key`, read before it is deleted (call `drop_orphans` after deleting the clip)."""
    row = tx.single("files/clip_files", clip_key=clip_key)
    return list(row["shas"]) if row else []


def drop_orphans(tx: Tx, shas: list[str]) -> list[str]:
    """Deletes the `File` nodes among `shas` that no session holds; returns their stored copies' paths."""
    if not shas:
        return []
    return [r["stored"] for r in tx.run("files/delete_orphans", shas=shas) if r["stored"]]


def remove_stored(settings: Settings, stored: Iterable[str]) -> int:
    """Removes stored copies (paths relative to data_dir) after the graph delete committed; returns how many."""
    root = (settings.data_dir / FILES_ROOT).resolve()
    removed = 0
    for rel in stored:
        path = (settings.data_dir / rel).resolve()
        if not path.is_relative_to(root):
            log.warning("not removing %s: outside %s", path, root)
            continue
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not remove the stored file %s: %s", path, exc)
    store = media_store(settings)
    if not store.is_local:  # the object store's copies go too (the local ones above were scratch copies)
        keys = [rel for rel in stored if (settings.data_dir / rel).resolve().is_relative_to(root)]
        removed = max(removed, store.delete_keys(keys))
    return removed


def stored_file(settings: Settings, stored: str) -> Path:
    return settings.data_dir / stored


def conversation_files(ex: Executor, source_id: str) -> list[dict[str, Any]]:
    """A conversation's files by session (clip index, sharing turn, name, kind, mime, size, stored copy, time
    shared, number of surrogate memories): what a reader or the explorer lists for a source."""
    return ex.read("files/session_files", source_id=source_id)


SHA256_HEX = frozenset("0123456789abcdef")
MAX_SURROGATES = 200  # a file has at most files.max_passages surrogates; a reader never needs more at once


def is_sha256(text: str) -> bool:
    """A file key as the graph stores it (64 lowercase hex digits): anything else names no file."""
    return len(text) == 64 and set(text) <= SHA256_HEX


def memory_files(ex: Executor, memory_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """memory id -> the files it cites ({sha256, name, kind, shared_at}): what a tool shows beside the evidence."""
    ids = sorted(set(memory_ids))
    if not ids:
        return {}
    return {r["memory_id"]: r["files"] for r in ex.read("files/memory_files", memory_ids=ids)}


def file_surrogates(ex: Executor, sha256: str, limit: int = MAX_SURROGATES) -> dict[str, Any] | None:
    """A file's reference, its shares and up to `limit` surrogate memories (raw tags); None if no such file."""
    if not is_sha256(sha256):
        return None
    rows = ex.read("files/surrogates", sha256=sha256, limit=max(1, min(limit, MAX_SURROGATES)))
    return rows[0] if rows else None


def held_copy(ex: Executor, settings: Settings, sha256: str) -> tuple[Path, str, str] | None:
    """(stored copy, mime, name) of a file a session holds, when the copy lies under ``<data_dir>/files/``; the
    explorer serves nothing else (the key is checked first, so a request never names a path)."""
    if not is_sha256(sha256):
        return None
    rows = ex.read("files/stored", sha256=sha256)
    if not rows or not rows[0]["stored"]:
        return None
    root = (settings.data_dir / FILES_ROOT).resolve()
    path = (settings.data_dir / rows[0]["stored"]).resolve()
    if not path.is_relative_to(root):
        return None
    if not path.is_file():  # with an object store, another host may have stored it: fetched to scratch
        try:
            path = fetch(settings, str(rows[0]["stored"]))
        except (NotFoundError, InvalidInputError):
            return None
    return path, str(rows[0]["mime"] or "application/octet-stream"), str(rows[0]["name"] or sha256)
