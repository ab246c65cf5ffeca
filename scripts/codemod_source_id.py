"""Codemod: the `video_id` identifier renamed `source_id` in Python and Cypher (issue 35, "Names that say what
things are"). Development tooling, not part of the package.

Why a codemod: `video_id` names a source (a video, a conversation, a facts list, a notes source) in about 700
places; renaming them by hand would miss some and touch others that mean something else. Migration 17
(m3graph/schema/sources.py) gives every source node `source_id` beside `video_id`, so a graph reader can already
use the new key; this script moves the code over once the lead decides to, in one reviewed change.

What it changes, by site kind (each counted separately):

* ``python-name``: a Python NAME token ``video_id`` (a variable, parameter, keyword argument or attribute),
  found with `tokenize`, so comments and other words are never touched.
* ``python-key``: ``"video_id"`` / ``'video_id'`` as a whole string literal (result-row keys, JSON fields).
* ``cypher-param``: ``$video_id`` in a `.cypher` / `.cypher.tmpl` file (the caller's keyword argument is a
  ``python-name`` site, so both move together).
* ``cypher-column``: ``AS video_id`` (a result column, read back as a ``python-key``).
* ``cypher-property``: ``.video_id`` and ``{video_id: ...}`` map keys, that is graph data on Clip, Memory, FaceObs,
  Utterance, Thing, ... nodes and the indexes over it. Renaming these needs a data migration of its own (and new
  indexes), so they are reported but only changed with ``--properties``.

A Python scope that already uses ``source_id`` beside ``video_id`` (the chat code's ``source_id`` is the same
thing; ``Speaker.source_id`` already exists) is listed as a conflict to review by hand: the rename would make two
names one. Compound names (``video_ids``, ``check_video_id``) are counted, never changed: ``source_ids`` already
means a memory's evidence turn ids.

Usage (from the repository root)::

    python scripts/codemod_source_id.py --check      # counts; exit 1 when a site would change
    python scripts/codemod_source_id.py --dry-run    # the unified diff, nothing written
    python scripts/codemod_source_id.py --apply      # writes the files (only when the lead decides)
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import re
import sys
import tokenize
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

OLD, NEW = "video_id", "source_id"
ROOT = Path(__file__).resolve().parent.parent
PY_ROOTS = ("m3graph", "bench", "tests", "scripts")
CYPHER_SUFFIXES = (".cypher", ".cypher.tmpl", ".variants.toml")
SKIP_PARTS = {".venv", "node_modules", "__pycache__", ".git", "results"}
THIS = Path(__file__).resolve()

_CYPHER_PARAM = re.compile(r"\$video_id\b")
_CYPHER_COLUMN = re.compile(r"(?i)\bAS\s+video_id\b")
_CYPHER_PROPERTY = re.compile(r"(?<=\.)video_id\b|(?<![$\w.])video_id(?=\s*:(?!:))")
_COMPOUND = re.compile(r"\b\w*video_id\w*\b")


@dataclass
class Report:
    sites: Counter[str] = field(default_factory=Counter)
    per_file: Counter[str] = field(default_factory=Counter)
    compound: Counter[str] = field(default_factory=Counter)
    conflicts: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    changed: dict[Path, str] = field(default_factory=dict)


def _files(root: Path) -> Iterator[Path]:
    for top in PY_ROOTS:
        for path in sorted((root / top).rglob("*")):
            if not path.is_file() or SKIP_PARTS & set(path.relative_to(root).parts) or path.resolve() == THIS:
                continue
            if path.suffix == ".py" or path.name.endswith(CYPHER_SUFFIXES):
                yield path


def _python(text: str, rel: str, report: Report) -> str:
    """The file with its `video_id` NAME tokens and whole-string keys renamed (token positions, so formatting
    and comments are kept)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        report.conflicts.append(f"{rel}: not tokenizable, skipped")
        return text
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []  # (row, start col, end col, new text)
    for tok in tokens:
        if tok.type == tokenize.NAME and tok.string == OLD:
            edits.append((tok.start[0], tok.start[1], tok.end[1], NEW))
            report.sites["python-name"] += 1
        elif tok.type == tokenize.STRING and tok.string in (f'"{OLD}"', f"'{OLD}'"):
            edits.append((tok.start[0], tok.start[1], tok.end[1], tok.string.replace(OLD, NEW)))
            report.sites["python-key"] += 1
        elif tok.type == tokenize.NAME and OLD in tok.string:
            report.compound[tok.string] += 1
    _conflicts(text, rel, report)
    for row, start, end, new in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:start] + new + line[end:]
    report.per_file[rel] += len(edits)
    return "".join(lines)


def _conflicts(text: str, rel: str, report: Report) -> None:
    """Functions that name both `video_id` and `source_id`: the rename would merge them."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for scope in ast.walk(tree):
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        names = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)}
        names |= {a.arg for n in ast.walk(scope) if isinstance(n, ast.arguments)
                  for a in (*n.posonlyargs, *n.args, *n.kwonlyargs)}
        names |= {k.arg for k in ast.walk(scope) if isinstance(k, ast.keyword) and k.arg}
        names |= {n.attr for n in ast.walk(scope) if isinstance(n, ast.Attribute)}
        if {OLD, NEW} <= names:
            report.conflicts.append(f"{rel}:{scope.lineno}: {scope.name} names both {OLD} and {NEW}")


def _cypher(text: str, report: Report, properties: bool) -> tuple[str, int]:
    count = 0
    for kind, pattern in (("cypher-param", _CYPHER_PARAM), ("cypher-column", _CYPHER_COLUMN)):
        found = len(pattern.findall(text))
        report.sites[kind] += found
        count += found
        text = pattern.sub(lambda m: m.group(0)[: -len(OLD)] + NEW, text)
    props = len(_CYPHER_PROPERTY.findall(text))
    report.sites["cypher-property"] += props
    if properties:
        text = _CYPHER_PROPERTY.sub(NEW, text)
        count += props
    for word in _COMPOUND.findall(text):
        if word != OLD:
            report.compound[word] += 1
    return text, count


def run(root: Path, properties: bool, want_diff: bool) -> Report:
    report = Report()
    for path in _files(root):
        rel = str(path.relative_to(root))
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            new = _python(text, rel, report)
        else:
            new, n = _cypher(text, report, properties)
            report.per_file[rel] += n
        if new != text:
            report.changed[path] = new
            if want_diff:
                report.diffs.append("".join(difflib.unified_diff(
                    text.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{rel}", f"b/{rel}")))
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scripts/codemod_source_id.py", description=__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="count the sites; exit 1 when any would change (default)")
    mode.add_argument("--dry-run", action="store_true", help="print the unified diff, write nothing")
    mode.add_argument("--apply", action="store_true", help="write the renamed files")
    p.add_argument("--properties", action="store_true",
                   help="also rename Cypher property keys (graph data: needs a data migration first)")
    p.add_argument("--root", type=Path, default=ROOT)
    args = p.parse_args(argv)
    report = run(args.root, args.properties, args.dry_run)
    if args.dry_run:
        sys.stdout.write("".join(report.diffs))
    if args.apply:
        for path, text in report.changed.items():
            path.write_text(text, encoding="utf-8")
    total = sum(v for k, v in report.sites.items() if args.properties or k != "cypher-property")
    out = sys.stderr if args.dry_run else sys.stdout
    print(f"{OLD} -> {NEW}: {total} sites in {len(report.changed)} files"
          f"{' (written)' if args.apply else ''}", file=out)
    for kind, n in sorted(report.sites.items()):
        note = "" if args.properties or kind != "cypher-property" else " (not changed: graph data, --properties)"
        print(f"  {kind}: {n}{note}", file=out)
    print(f"  compound names, counted only: {sum(report.compound.values())} "
          f"({', '.join(f'{w} {n}' for w, n in report.compound.most_common(6))})", file=out)
    print(f"  scopes to review by hand (both {OLD} and {NEW}): {len(report.conflicts)}", file=out)
    for line in report.conflicts:
        print(f"    {line}", file=out)
    if args.apply:
        return 0
    return 1 if report.changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
