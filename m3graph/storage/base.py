"""The one interface every media reader and writer uses, whatever holds the bytes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from pathlib import Path

from m3graph.errors import M3GraphError

CHUNK = 1 << 20


class MissingCopiesError(M3GraphError):
    """A delete went through in the graph, but stored copies the graph named were not in the store (or could not
    be removed): the data directory or store in use may not be the one the media was written to."""


class MediaStore(ABC):
    """Objects under storage-relative keys (m3graph.storage.keys). Workers produce files on local scratch (ffmpeg
    needs a file); what other components need afterwards is put here, and readers get it back from here.

    `is_local` says whether the store IS the scratch directory (the local default): then a key's scratch file is the
    stored object, and putting a scratch file is a no-op."""

    is_local: bool = False

    @abstractmethod
    def put_file(self, key: str, path: Path) -> None:
        """Stores the file at `path` under `key` (replacing an object there)."""

    @abstractmethod
    def put_bytes(self, key: str, data: bytes) -> None:
        """Stores `data` under `key`; a reader sees the old object or the new one, never a part."""

    @abstractmethod
    def get_bytes(self, key: str) -> bytes:
        """The object's bytes; raises NotFoundError when there is none."""

    @abstractmethod
    def get_file(self, key: str, path: Path) -> Path:
        """Writes the object to `path` (atomically) and returns `path`; raises NotFoundError when there is none."""

    @abstractmethod
    def size(self, key: str) -> int | None:
        """The object's size in bytes, or None when there is no object under `key`."""

    def exists(self, key: str) -> bool:
        return self.size(key) is not None

    def existing(self, keys: Iterable[str]) -> set[str]:
        """Which of `keys` have an object: one listing per folder of a video or import (a video's crops can be
        thousands of objects: one request per key would be slow on S3), one lookup per other key."""
        found: set[str] = set()
        folders: dict[str, list[str]] = {}
        for key in set(keys):
            parts = key.split("/")
            if parts[0] in ("videos", "imports") and len(parts) > 2:
                folders.setdefault(f"{parts[0]}/{parts[1]}/", []).append(key)
            elif self.exists(key):
                found.add(key)
        for prefix, wanted in folders.items():
            if len(wanted) == 1:
                found.update(k for k in wanted if self.exists(k))
            else:
                found.update(set(wanted) & set(self.list(prefix)))
        return found

    @abstractmethod
    def list(self, prefix: str) -> list[str]:
        """Every key under `prefix` (a folder: ends with '/'), sorted."""

    @abstractmethod
    def delete_keys(self, keys: Iterable[str]) -> int:
        """Deletes these objects (missing ones are skipped); returns how many existed."""

    def delete_prefix(self, prefix: str) -> int:
        """Deletes every object under `prefix` (a folder, ending with '/'); returns how many went."""
        return self.delete_keys(self.list(prefix))

    @abstractmethod
    def stream(self, key: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        """The bytes [start, end] (inclusive, HTTP Range style) in chunks, for serving over HTTP."""

    def local_file(self, key: str) -> Path | None:
        """The object as a file on this host without copying (local store only), else None."""
        return None
