"""SHA-256 of a file, read in blocks: the one way m3graph checks a pinned download (model weights, Browser's jar).

Why a module of its own: the local server tooling, the text and speaker embedders all verify pinned files, and the
local server package may import only errors, settings and this (tests/unit/test_layers.py).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

_BLOCK = 1 << 20


def file_sha256(path: Path) -> str:
    """The hex SHA-256 of `path`'s bytes, without reading the whole file into memory."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()
