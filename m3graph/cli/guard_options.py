"""The guarded-Cypher bounds as click options (`m3graph cypher`, `m3graph mcp`): refused when the command line is
parsed (exit status 2, one line), by the service's own checks (`m3graph.service.guarded`)."""

from __future__ import annotations

import click

from m3graph.errors import InvalidInputError
from m3graph.service.guarded import check_max_rows, check_timeout


def click_timeout(_ctx: click.Context, _param: click.Parameter, value: float) -> float:
    """Click callback: a timeout in (0, 300] seconds."""
    try:
        return check_timeout(value, "the value")
    except InvalidInputError as exc:
        raise click.BadParameter(str(exc)) from None


def click_max_rows(_ctx: click.Context, _param: click.Parameter, value: int) -> int:
    """Click callback: a row cap in 1..100000."""
    try:
        return check_max_rows(value, "the value")
    except InvalidInputError as exc:
        raise click.BadParameter(str(exc)) from None


__all__ = ["click_max_rows", "click_timeout"]
