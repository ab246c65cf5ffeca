"""`m3graph cypher "QUERY" [--param k=v]`: guarded read-only Cypher (m3graph/service/guarded.py) from a shell."""

from __future__ import annotations

import json

import click

from m3graph.cli.guard_options import click_max_rows, click_timeout
from m3graph.service.guarded import GuardLimits
from m3graph.settings import Settings


def _param(raw: str) -> tuple[str, object]:
    from m3graph.errors import InvalidInputError

    key, sep, value = raw.partition("=")
    if not sep or not key.isidentifier():
        raise InvalidInputError(f"--param {raw!r}: expected NAME=VALUE")
    try:
        return key, json.loads(value)  # numbers, lists, true/false/null as JSON; anything else is a string
    except json.JSONDecodeError:
        return key, value


@click.command("cypher")
@click.argument("query")
@click.option("--param", "params", multiple=True, help="NAME=VALUE (JSON or a plain string); repeatable.")
@click.option("--timeout", "timeout_s", type=float, default=GuardLimits.timeout_s, show_default=True,
              callback=click_timeout, help="Server-side limit, s, in (0, 300].")
@click.option("--max-rows", type=int, default=GuardLimits.max_rows, show_default=True, callback=click_max_rows,
              help="Row cap, 1..100000.")
@click.pass_obj
def cypher(settings: Settings, query: str, params: tuple[str, ...], timeout_s: float, max_rows: int) -> None:
    """Run a READ-ONLY Cypher query through the guard; prints one JSON object per row (embeddings hidden)."""
    from m3graph.cli.session import open_graph
    from m3graph.service.guarded import read_cypher

    values = dict(_param(p) for p in params)
    with open_graph(settings) as graph:
        out = read_cypher(graph, query, values, GuardLimits(timeout_s=timeout_s, max_rows=max_rows))
    for row in out.rows:
        click.echo(json.dumps(row, default=str))
    for note in out.notes:
        click.echo(note, err=True)
