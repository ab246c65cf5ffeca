"""Sources are sources in the code (issue 35): after the rename, no Python identifier, keyword, result key or
Cypher parameter says `video_id` for what is any source's id. The stored property keeps its name on Clip, Memory,
FaceObs, Utterance and Thing nodes (the indexes and the memory vector index filter on it), so Cypher may still read
`x.video_id`; everything the code passes or returns is `source_id`.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CODE = [p for root in ("m3graph", "bench") for p in (REPO / root).rglob("*.py")]
CYPHER = [p for p in (REPO / "m3graph").rglob("*") if p.name.endswith((".cypher", ".cypher.tmpl", ".toml"))]
# Migrations read what old stores hold and name it as it was then.
MIGRATION_FILES = {"schema/sources.py", "cypher/schema/source_page.cypher", "cypher/schema/set_sources.cypher"}


def _relative(path: Path) -> str:
    return path.relative_to(REPO / "m3graph").as_posix() if path.is_relative_to(REPO / "m3graph") else path.name


def test_no_python_name_or_f_string_says_video_id() -> None:
    found = []
    for path in CODE:
        if _relative(path) in MIGRATION_FILES:
            continue
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
            fstring = tok.type == tokenize.STRING and re.match(r"(?i)[rb]*f", tok.string)
            if (tok.type == tokenize.NAME and tok.string == "video_id") or (
                    fstring and re.search(r"[\w)\]]\.video_id\b|\{video_id\b", tok.string)):
                found.append(f"{path.relative_to(REPO)}:{tok.start[0]}")
    assert not found, f"`video_id` as a code name: {found}"


def test_no_cypher_parameter_or_result_column_says_video_id() -> None:
    found = []
    for path in CYPHER:
        if _relative(path) in MIGRATION_FILES:
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in (r"\$video_id\b", r"(?i)\bAS\s+video_id\b", r"^// (?:params|returns):.*\bvideo_id\b"):
            found += [f"{path.relative_to(REPO)}: {m.group(0)}" for m in re.finditer(pattern, text, re.M)]
    assert not found, f"`video_id` passed to or returned from Cypher: {found}"
