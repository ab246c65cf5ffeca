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

from m3graph.graphdb.executor import Executor, Tx
from m3graph.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileLinks:
    """What one session writes about its files (rows for the `files/*` statements)."""

    files: list[dict[str, Any]] = field(default_factory=list)  # one per share: sha256, kind, mime, size, ...
    cites: list[dict[str, Any]] = field(default_factory=list)  # surrogate memory id -> sha256
    shares: list[dict[str, Any]] = field(default_factory=list)  # sharing turn's memory id -> sha256

    def write(self, tx: Tx, clip_key: str) -> None:
        if not self.files:
            return
        tx.run("files/link_session", clip_key=clip_key, files=self.files)
        if self.cites or self.shares:
            tx.run("files/cite", cites=self.cites, shares=self.shares)


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
    root = (settings.data_dir / "files").resolve()
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
    return removed


def stored_file(settings: Settings, stored: str) -> Path:
    return settings.data_dir / stored


def conversation_files(ex: Executor, video_id: str) -> list[dict[str, Any]]:
    """A conversation's files by session (clip index, sharing turn, name, kind, mime, size, stored copy, time
    shared, number of surrogate memories): what a reader or the explorer lists for a source."""
    return ex.read("files/session_files", video_id=video_id)
