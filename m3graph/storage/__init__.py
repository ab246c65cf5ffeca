"""Media storage: where crops, voice snippets, clip cuts, perception caches, plans and raw model outputs live.

`settings.storage.url` chooses the store: ``local`` (the default) keeps them as files under `settings.data_dir`,
as always; ``s3://bucket/prefix`` puts them in an S3-compatible object store (`S3Store`), so workers on separate
hosts with separate data directories, the explorer and the MCP server share them through the store. Either way
the graph and the caches name media by storage-relative key (`keys`), never by a host path.

Workers still produce files on local scratch (ffmpeg and the perception models read and write files): the scratch
file of a key is ``data_dir/<key>``. With the local store that file IS the stored object; with S3, `publish` puts
it into the store and `fetch` brings an object back to scratch on whichever host needs it.
"""

from __future__ import annotations

import functools
from pathlib import Path

from m3graph.settings import Settings, StorageConfig
from m3graph.storage.base import MediaStore, MissingCopiesError
from m3graph.storage.keys import check_key, is_key, key_of
from m3graph.storage.local import LocalStore, atomic_write_bytes

__all__ = ["LocalStore", "MediaStore", "MissingCopiesError", "atomic_write_bytes", "check_key", "fetch", "is_key",
           "key_of", "media_store", "publish", "scratch"]


@functools.lru_cache(maxsize=8)
def _store(config: StorageConfig, data_dir: Path) -> MediaStore:
    if config.is_local:
        return LocalStore(data_dir)
    from m3graph.storage.s3 import S3Store

    return S3Store(config)


def media_store(settings: Settings) -> MediaStore:
    """The configured store (one per configuration and data directory in a process: its client is reused)."""
    return _store(settings.storage, Path(settings.data_dir))


def scratch(settings: Settings, key: str) -> Path:
    """Where a key's file is produced or fetched on this host."""
    return Path(settings.data_dir) / check_key(key)


def publish(settings: Settings, key: str, keep: bool = True) -> None:
    """Puts the scratch file of `key` into the store (nothing to do for the local store). With `keep` False the
    scratch copy is removed afterwards: every later reader gets the object from the store."""
    store = media_store(settings)
    if store.is_local:
        return
    path = scratch(settings, key)
    store.put_file(key, path)
    if not keep:
        path.unlink(missing_ok=True)


def fetch(settings: Settings, key: str) -> Path:
    """A local file with the object's bytes: the stored file itself (local store), or the scratch copy, fetched
    from the store when this host does not have it. Raises NotFoundError when the store has no such object."""
    store = media_store(settings)
    path = scratch(settings, key)
    if store.is_local:
        found = store.local_file(key)
        if found is None:
            from m3graph.errors import NotFoundError

            raise NotFoundError(f"no media object {key}")
        return found
    if not path.is_file():
        store.get_file(key, path)
    return path
