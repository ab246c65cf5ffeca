"""Named Cypher queries, one `.cypher` file each, loaded once at import.

Python never assembles Cypher text: code refers to a query by its name (``"identity/match_candidates"``) and
passes parameters. Each file starts with ``//`` header lines declaring ``mode: read|write|schema`` and the
parameters it takes; the loader refuses a file without a valid mode, and a test EXPLAINs every file against
the real server and checks the declared mode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Literal

Mode = Literal["read", "write", "schema"]
_HEADER = re.compile(r"^//\s*(\w+)\s*:\s*(.*?)\s*$")


@dataclass(frozen=True)
class CypherQuery:
    name: str
    text: str
    mode: Mode
    params: tuple[str, ...]


def _parse(name: str, text: str) -> CypherQuery:
    meta: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        match = _HEADER.match(line)
        if match:
            meta[match.group(1).lower()] = match.group(2)
    mode = meta.get("mode")
    if mode not in ("read", "write", "schema"):
        raise RuntimeError(f"cypher file {name}.cypher lacks a '// mode: read|write|schema' header")
    params = tuple(p.strip().lstrip("$") for p in meta.get("params", "").split(",") if p.strip())
    return CypherQuery(name=name, text=text.strip(), mode=mode, params=params)  # type: ignore[arg-type]


# Folders of named queries: the product's, and the development kit's (bench/, eval/), which keeps its queries
# beside its own code but runs them through the same executor under the same naming rule.
ROOTS = ("m3graph.cypher", "m3graph.devkit.cypher")


def _load_all() -> dict[str, CypherQuery]:
    found: dict[str, CypherQuery] = {}
    for package in ROOTS:
        for name, query_ in _load_folder(package).items():
            if name in found:
                raise RuntimeError(f"cypher query {name} is defined twice (in {package} and another root)")
            found[name] = query_
    return found


def _load_folder(package: str) -> dict[str, CypherQuery]:
    root = resources.files(package)
    found: dict[str, CypherQuery] = {}
    stack = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                stack.append((entry, f"{prefix}{entry.name}/"))
            elif entry.name.endswith(".cypher"):
                name = prefix + entry.name[: -len(".cypher")]
                found[name] = _parse(name, entry.read_text(encoding="utf-8"))
    return found


QUERIES: dict[str, CypherQuery] = _load_all()


def query(name: str) -> CypherQuery:
    """The named query; a missing name is a programming error, so it fails loudly."""
    try:
        return QUERIES[name]
    except KeyError:
        raise KeyError(f"no cypher file named {name}.cypher under m3graph/cypher/") from None
