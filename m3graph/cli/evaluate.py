"""`m3graph eval`: registered from the development kit when it is installed.

Why a shim: the evaluation runners, their question sets and their queries are development tooling
(m3graph/devkit/), left out of the product wheel. A product install still answers `m3graph eval ...` with one line
saying where the command lives instead of failing at import or showing no such command.
"""

from __future__ import annotations

import click

try:
    from m3graph.devkit.eval_cli import evaluate
except ModuleNotFoundError as exc:
    if not (exc.name or "").startswith("m3graph.devkit"):
        raise

    _MISSING = ("m3graph eval is part of the development kit, which this install does not have: install m3graph "
                "from a checkout with `pip install -e \".[dev]\"` (scripts/setup.sh)")

    class _NotInstalled(click.Group):
        """Answers every `m3graph eval ...` (subcommand or not) with where the command lives."""

        def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
            raise click.UsageError(_MISSING, ctx)

    @click.group("eval", cls=_NotInstalled)
    def evaluate() -> None:
        """Evaluations (development install only: `pip install -e ".[dev]"` in a checkout, or scripts/setup.sh)."""


__all__ = ["evaluate"]
