"""How commands print what they found: an aligned table with a header for people, or `--json` for programs.

Every command that prints a table takes `--json` (`json_option`) and prints the service result's `to_json()`
instead, the same JSON the MCP tools send.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click

json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print the result as JSON (what the MCP tools send) instead of a table.")


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], empty: str = "(none)") -> None:
    """Columns left-aligned to their widest cell, numbers right-aligned; the last column is not padded."""
    if not rows:
        click.echo(empty)
        return
    cells = [[str(h) for h in header]] + [["-" if v is None else str(v) for v in row] for row in rows]
    numeric = [all(isinstance(r[i], int | float) and not isinstance(r[i], bool) for r in rows if r[i] is not None)
               for i in range(len(header))]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for row in cells:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric, strict=True)]
        click.echo("  ".join(parts).rstrip())




@contextmanager
def step(what: str) -> Iterator[None]:
    """Progress of a step that may take more than a few seconds, on stderr: "what … done (3.2 s)"."""
    click.echo(f"{what} …", err=True)
    start = time.monotonic()
    yield
    click.echo(f"  done ({time.monotonic() - start:.1f} s)", err=True)


__all__ = ["echo_json", "json_option", "step", "table"]
