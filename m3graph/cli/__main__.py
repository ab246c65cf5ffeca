"""`python -m m3graph.cli`: the same as the `m3graph` command."""

from m3graph.cli import run

run()
