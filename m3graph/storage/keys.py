"""Storage-relative keys: how the graph, the caches and every component name a media object.

A key is a relative POSIX path such as ``videos/<video>/crops/00000/face_....jpg``, the same in every store and on
every host, so nothing a worker writes depends on where its data directory is. Graphs written before keys held
absolute paths or ``file://`` URIs under the data directory; `key_of` maps those to the same keys (what migration
15 does to the graph once), so a reader accepts both. Keys come from the graph, which an import can fill, so they
are checked: no absolute path, no ``..``, no control characters, bounded length.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from m3graph.errors import InvalidInputError

MAX_KEY = 900  # S3 allows 1024 bytes; room for a prefix
_PART = re.compile(r"[A-Za-z0-9._@+=,#:-][A-Za-z0-9 ._@+=,#:-]*")
TOPS = ("videos", "imports", "files")  # the only top-level folders media lives in (files: shared chat files)


def is_key(value: str) -> bool:
    """Whether `value` is a well-formed storage key (relative, no '..', printable ASCII name parts)."""
    if not value or len(value) > MAX_KEY or value.startswith("/") or "\\" in value:
        return False
    parts = value.split("/")
    return parts[0] in TOPS and all(p not in ("", ".", "..") and _PART.fullmatch(p) for p in parts)


def check_key(value: str) -> str:
    if not is_key(value):
        raise InvalidInputError(f"not a media storage key: {value[:120]!r}")
    return value


def key_of(uri: str | None, data_dir: Path) -> str | None:
    """The key a graph reference names: a key itself, or a legacy absolute path / ``file://`` URI under `data_dir`
    (the path is resolved, so a symlinked data directory matches). None for anything else (an http URL, a path
    outside the data directory, garbage)."""
    if not uri or "\x00" in uri:
        return None
    if is_key(uri):
        return uri
    if uri.startswith("file://"):
        path = Path(unquote(urlsplit(uri).path))
    elif uri.startswith("/"):
        path = Path(uri)
    else:
        return None
    try:
        rel = path.resolve().relative_to(Path(data_dir).resolve())
    except (ValueError, OSError):
        return None
    key = PurePosixPath(*rel.parts).as_posix()
    return key if is_key(key) else None


def video_prefix(source_id: str) -> str:
    return f"videos/{source_id}/"


def import_prefix(source_id: str) -> str:
    return f"imports/{source_id}/"
