"""Named Cypher queries, one `.cypher` file each, loaded once at import.

Python never assembles Cypher text: code refers to a query by its name (``"identity/face_match"``) and
passes parameters. Each file starts with ``//`` header lines declaring ``mode: read|write|schema`` and the
parameters it takes; the loader refuses a file without a valid mode, and a test EXPLAINs every file against
the real server and checks the declared mode.

Variants of one statement (per server capability, per entity kind) are written once: a template
``NAME.cypher.tmpl`` with ``{{slot}}`` placeholders and, beside it, ``NAME.variants.toml``, whose tables name the
queries it yields and give each slot's text (`render`). A placeholder alone on its line takes a block of lines
(an empty block removes the line); elsewhere it takes one line's worth of text. Slot texts come only from these
packaged files, never from a caller, and every variant must fill exactly the template's slots.
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Literal

Mode = Literal["read", "write", "schema"]
_HEADER = re.compile(r"^//\s*(\w+)\s*:\s*(.*?)\s*$")
_SLOT = re.compile(r"\{\{([a-z_]+)\}\}")
_BLOCK_SLOT = re.compile(r"^\{\{([a-z_]+)\}\}\n", re.M)
TEMPLATE_SUFFIX, VARIANTS_SUFFIX = ".cypher.tmpl", ".variants.toml"


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
# beside its own code but runs them through the same executor under the same naming rule. The development kit is
# left out of the product's wheel (pyproject.toml), so its folder is loaded only where it is installed.
ROOTS = ("m3graph.cypher", "m3graph.devkit.cypher")
OPTIONAL_ROOTS = frozenset({"m3graph.devkit.cypher"})


def _installed(package: str) -> bool:
    """Whether a query folder's package is importable (the development kit is absent from a product install)."""
    try:
        return importlib.util.find_spec(package) is not None
    except ModuleNotFoundError:  # its parent package is missing too
        return False


def _load_all() -> dict[str, CypherQuery]:
    found: dict[str, CypherQuery] = {}
    for package in ROOTS:
        if package in OPTIONAL_ROOTS and not _installed(package):
            continue
        for name, query_ in _load_folder(package).items():
            if name in found:
                raise RuntimeError(f"cypher query {name} is defined twice (in {package} and another root)")
            found[name] = query_
    return found


def render(template: str, slots: dict[str, str], name: str = "template") -> str:
    """`template` with its `{{slot}}` placeholders filled from `slots` (exactly the template's slots)."""
    wanted = set(_SLOT.findall(template))
    if set(slots) != wanted:
        raise RuntimeError(f"cypher variant {name}: slots {sorted(slots)} do not match the template's {sorted(wanted)}")
    for slot, text in slots.items():
        if not isinstance(text, str):
            raise RuntimeError(f"cypher variant {name}: slot {slot} is not text")

    def block(match: re.Match[str]) -> str:
        text = slots[match.group(1)].rstrip("\n")
        return text + "\n" if text else ""

    def inline(match: re.Match[str]) -> str:
        text = slots[match.group(1)]
        if "\n" in text:
            raise RuntimeError(f"cypher variant {name}: slot {match.group(1)} is used inline but spans lines")
        return text

    return _SLOT.sub(inline, _BLOCK_SLOT.sub(block, template))


def _variants(folder: Traversable, prefix: str, entry: Traversable) -> dict[str, CypherQuery]:
    stem = entry.name[: -len(TEMPLATE_SUFFIX)]
    table = folder / (stem + VARIANTS_SUFFIX)
    if not table.is_file():
        raise RuntimeError(f"cypher template {prefix}{entry.name} has no {stem}{VARIANTS_SUFFIX} beside it")
    template = entry.read_text(encoding="utf-8")
    found: dict[str, CypherQuery] = {}
    for variant, slots in tomllib.loads(table.read_text(encoding="utf-8")).items():
        name = prefix + variant
        found[name] = _parse(name, render(template, slots, name))
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
                continue
            if entry.name.endswith(".cypher"):
                name = prefix + entry.name[: -len(".cypher")]
                named = {name: _parse(name, entry.read_text(encoding="utf-8"))}
            elif entry.name.endswith(TEMPLATE_SUFFIX):
                named = _variants(folder, prefix, entry)
            else:
                continue
            for name, query_ in named.items():
                if name in found:
                    raise RuntimeError(f"cypher query {name} is defined twice in {package}")
                found[name] = query_
    return found


QUERIES: dict[str, CypherQuery] = _load_all()


def query(name: str) -> CypherQuery:
    """The named query; a missing name is a programming error, so it fails loudly."""
    try:
        return QUERIES[name]
    except KeyError:
        raise KeyError(f"no cypher file named {name}.cypher under m3graph/cypher/") from None
