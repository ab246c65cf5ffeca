"""Lucene segment census of the vector indexes, and which index settings the launcher put into effect.

An HNSW query visits every segment's graph, so its cost grows with the number of segments; the launcher asks
Neo4j for one segment after bulk population (2026.x: `post_population_compaction=FULL`; 5.26: merge factor 100).
Where Neo4j keeps the files: `<home>/data/databases/<db>/schema/index/vector-<provider>/<index id>/<partition>/`
(`vector-2026.08` on 2026.x, `vector-2.0` on 5.26), one Lucene directory per partition. Two counts per index:

* `committed`: the number of segments listed in the newest `segments_N` file, i.e. the last Lucene commit that
  Neo4j made (at index population and at checkpoints). Read from the file's header (Lucene's SegmentInfos
  format: codec header, version vints, version, counter, then the segment count as a big-endian int).
* `si_files`: the `_<n>.si` files on disk, one per segment written, including segments flushed after the last
  commit (what the live reader searches) and, briefly, merged-away segments an open reader still holds.

After a clean server stop the two agree (shutdown checkpoints every index).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

LUCENE_MAGIC = 0x3FD76C17
SEGMENTS_FILE = re.compile(r"^segments_([0-9a-z]+)$")
COMPACTION_SETTINGS = ("internal.dbms.index.vector.post_population_compaction",
                       "internal.dbms.index.vector.population_merge_factor")


def _vint(buf: bytes, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def committed_segments(path: Path) -> int | None:
    """Segment count of one `segments_N` file; None when the file is not in the format this parser knows."""
    try:
        buf = path.read_bytes()
        if struct.unpack(">I", buf[:4])[0] != LUCENE_MAGIC:
            return None
        n, i = _vint(buf, 4)
        i += n + 4 + 16  # codec name, format version, segment-infos id
        i += 1 + buf[i]  # generation suffix
        for _ in range(4):  # Lucene version major/minor/bugfix, index-created major version
            _, i = _vint(buf, i)
        i += 8  # version (big-endian long)
        _, i = _vint(buf, i)  # name counter
        count = struct.unpack(">i", buf[i:i + 4])[0]
    except (OSError, IndexError, struct.error):
        return None
    return count if count >= 0 else None


def _newest_segments_file(directory: Path) -> Path | None:
    gens = [(int(m.group(1), 36), p) for p in directory.iterdir() if (m := SEGMENTS_FILE.match(p.name))]
    return max(gens)[1] if gens else None


def census(root: Path, index_id: int) -> dict[str, Any]:
    """Segments of one vector index over all its partitions (see the module docstring for the two counts)."""
    partitions = sorted(d for base in root.glob(f"vector-*/{index_id}") for d in base.iterdir() if d.is_dir())
    committed: int | None = 0
    si = files = size = 0
    for part in partitions:
        newest = _newest_segments_file(part)
        count = committed_segments(newest) if newest is not None else 0
        committed = None if committed is None or count is None else committed + count
        for f in part.iterdir():
            if f.is_file():
                files += 1
                size += f.stat().st_size
                si += f.suffix == ".si"
    providers = sorted({p.parent.parent.name for p in partitions})
    return {"committed": committed, "si_files": si, "partitions": len(partitions), "files": files,
            "mb": round(size / 2**20, 1), "provider_dirs": providers}


def compaction_settings(cmdline: list[str], shown: list[dict[str, Any]]) -> dict[str, Any]:
    """The compaction/merge settings the launcher passed (`--setting k=v` on its command line) and, where the
    server lists them, the values SHOW SETTINGS reports; internal settings are often not listed there."""
    passed = {}
    for flag, value in zip(cmdline, cmdline[1:], strict=False):
        if flag == "--setting" and "=" in value:
            name, _, v = value.partition("=")
            if name in COMPACTION_SETTINGS or "index.vector" in name:
                passed[name] = v
    return {"launcher_args": passed, "show_settings": {r["name"]: r["value"] for r in shown}}


def process_cmdline(pid: int | None) -> list[str]:
    if pid is None:
        return []
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def log_lines(home: Path, pattern: str = r"[\w.]*compaction[\w.]*\W{0,6}\w*", limit: int = 10) -> list[str]:
    """What the server's logs say about compaction (the settings dump, any compaction message): evidence that the
    setting reached the server, each hit cut to the matched words."""
    rx = re.compile(pattern, re.I)
    out: list[str] = []
    for log in sorted(home.rglob("*.log")):
        try:
            text = log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for m in rx.finditer(text):
            hit = f"{log.name}: {m.group(0)}"
            if hit not in out:
                out.append(hit)
            if len(out) >= limit:
                return out
    return out
