"""The default store: files under the data directory, exactly where m3graph always kept them."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from m3graph.errors import NotFoundError
from m3graph.storage.base import CHUNK, MediaStore
from m3graph.storage.keys import check_key


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Unique temporary name, then rename: concurrent writers of one result never trip over each other's temporary
    file, and a reader sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


class LocalStore(MediaStore):
    is_local = True

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        """The file of `key`. Keys are checked (relative, no '..'), and a symlink leading out of the data directory
        is refused too: a path planted in the graph never reaches another file of this host."""
        path = self.root / check_key(key.rstrip("/"))
        if not path.resolve().is_relative_to(self.root.resolve()):
            raise NotFoundError(f"no media object {key}")
        return path

    def put_file(self, key: str, path: Path) -> None:
        target = self.path(key)
        if target.exists() and target.resolve() == Path(path).resolve():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        shutil.copyfile(path, tmp)
        tmp.replace(target)

    def put_bytes(self, key: str, data: bytes) -> None:
        atomic_write_bytes(self.path(key), data)

    def get_bytes(self, key: str) -> bytes:
        path = self.path(key)
        if not path.is_file():
            raise NotFoundError(f"no media object {key}")
        return path.read_bytes()

    def get_file(self, key: str, path: Path) -> Path:
        source = self.path(key)
        if not source.is_file():
            raise NotFoundError(f"no media object {key}")
        if Path(path).resolve() != source.resolve():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(path).with_name(f".{Path(path).name}.{os.getpid()}.{threading.get_ident()}.tmp")
            shutil.copyfile(source, tmp)
            tmp.replace(path)
        return Path(path)

    def size(self, key: str) -> int | None:
        path = self.path(key)
        return path.stat().st_size if path.is_file() else None

    def list(self, prefix: str) -> list[str]:
        folder = self.path(prefix)
        if not folder.is_dir():
            return []
        return sorted(p.relative_to(self.root).as_posix() for p in folder.rglob("*") if p.is_file())

    def delete_keys(self, keys: Iterable[str]) -> int:
        n = 0
        for key in keys:
            path = self.path(key)
            if path.is_file() or path.is_symlink():
                path.unlink(missing_ok=True)
                n += 1
        return n

    def delete_prefix(self, prefix: str) -> int:
        folder = self.path(prefix)
        if folder.is_symlink() or folder.is_file():
            folder.unlink(missing_ok=True)
            return 1
        if not folder.is_dir():
            return 0
        n = sum(1 for p in folder.rglob("*") if p.is_file())
        shutil.rmtree(folder, ignore_errors=True)
        return n

    def stream(self, key: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        path = self.path(key)
        if not path.is_file():
            raise NotFoundError(f"no media object {key}")
        with path.open("rb") as fh:
            fh.seek(start)
            left = None if end is None else end - start + 1
            while left is None or left > 0:
                chunk = fh.read(CHUNK if left is None else min(CHUNK, left))
                if not chunk:
                    return
                if left is not None:
                    left -= len(chunk)
                yield chunk

    def local_file(self, key: str) -> Path | None:
        path = self.path(key)
        return path if path.is_file() else None
