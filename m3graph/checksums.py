"""Pinned downloads: the SHA-256 of a file read in blocks, and a jar fetched through Maven's own client.

Why a module of its own: the local server tooling, the text and speaker embedders all verify pinned files, and the
local server package may import only errors, settings and this (tests/unit/test_layers.py).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

_BLOCK = 1 << 20


def file_sha256(path: Path) -> str:
    """The hex SHA-256 of `path`'s bytes, without reading the whole file into memory."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def maven_jar_path(group: str, artifact: str, version: str) -> Path:
    """Where Maven keeps the artifact's jar in its local repository."""
    folder = Path.home() / ".m2" / "repository" / group.replace(".", "/") / artifact / version
    return folder / f"{artifact}-{version}.jar"


class MavenFetchError(Exception):
    """Maven could not provide the jar; the message ends with the tail of Maven's output."""


def fetch_maven_jar(group: str, artifact: str, version: str, mvn: str = "mvn") -> Path:
    """The artifact's jar from Maven's local repository (~/.m2), fetched with `mvn dependency:get` when it is not
    there yet (Maven's own client and settings; no host is named here). The caller checks the jar's pin."""
    jar = maven_jar_path(group, artifact, version)
    if not jar.is_file():
        done = subprocess.run([shutil.which(mvn) or mvn, "-q", "-B", "dependency:get",
                               f"-Dartifact={group}:{artifact}:{version}", "-Dtransitive=false"],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0 or not jar.is_file():
            raise MavenFetchError(f"could not fetch {group}:{artifact}:{version} through Maven: "
                                  f"{(done.stdout + done.stderr).strip()[-600:]}")
    return jar
