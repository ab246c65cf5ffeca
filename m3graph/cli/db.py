"""`m3graph db ...`: manage the local embedded Neo4j server.

With `NEO4J_URI` set these commands leave the database alone: that server belongs to whoever runs it (docker
compose, Aura, a cluster), and m3graph only connects to it.
"""

from __future__ import annotations

import click
from neo4j import GraphDatabase
from neo4j.exceptions import DriverError, Neo4jError

from m3graph.errors import ServerError
from m3graph.graphdb.server import LocalNeo4j, ServerStatus
from m3graph.settings import Settings, load_settings


def _settings(ctx: click.Context) -> Settings:
    # The root group may already have built Settings (from --config etc.); only fall back to loading them here.
    found = ctx.find_object(Settings)
    return found if found is not None else load_settings()


def _print_status(status: ServerStatus, *, started: bool = False) -> None:
    click.echo(f"bolt:    {status.bolt_uri}")
    click.echo(f"home:    {status.home}")
    click.echo(f"running: {'yes' if status.running else 'no'}")
    if status.running:
        click.echo(f"pid:     {status.pid}")
        click.echo(f"ready:   {'yes' if status.ready else 'no'}")
        if started:  # only `start` knows whether it reused a server
            click.echo(f"reused:  {'yes' if status.reused else 'no'}")
        if status.startup_s is not None:
            click.echo(f"startup: {status.startup_s:.1f} s")
        if status.rss_mb is not None:
            click.echo(f"rss:     {status.rss_mb:.0f} MB")


@click.group()
def db() -> None:
    """Build, start, stop and inspect the local Neo4j server (unused when NEO4J_URI is set)."""


@db.command()
@click.option("--force", is_flag=True, help="Rebuild even when an up-to-date build exists.")
@click.pass_context
def build(ctx: click.Context, force: bool) -> None:
    """Compile the Neo4j launcher with Maven and collect its jars (needs a JDK 17+ and mvn)."""
    try:
        build_dir = LocalNeo4j(_settings(ctx)).build(force=force)
    except ServerError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"launcher built in {build_dir}")


@db.command()
@click.option("--build/--no-build", "do_build", default=True, show_default=True, help="Build the launcher if needed.")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait until Bolt accepts connections.")
@click.pass_context
def start(ctx: click.Context, do_build: bool, wait: bool) -> None:
    """Start the local server in the background, or reuse the one already running for this home."""
    settings = _settings(ctx)
    if not settings.uses_local_server:
        click.echo(f"NEO4J_URI is set: using the external server at {settings.bolt_uri}; nothing started.")
        return
    server = LocalNeo4j(settings)
    try:
        if do_build:
            server.build()
        status = server.start(wait=wait)
    except ServerError as exc:
        raise click.ClickException(str(exc)) from exc
    _print_status(status, started=True)


@db.command()
@click.option("--timeout", default=300.0, show_default=True,
              help="Seconds to wait for a clean shutdown before SIGKILL (a large store needs minutes).")
@click.pass_context
def stop(ctx: click.Context, timeout: float) -> None:
    """Stop the local server of this home (a clean shutdown: the store needs no recovery on the next start)."""
    settings = _settings(ctx)
    if not settings.uses_local_server:
        click.echo(
            f"NEO4J_URI is set: the external server at {settings.bolt_uri} is not managed here; nothing stopped."
        )
        return
    try:
        stopped = LocalNeo4j(settings).stop(timeout=timeout)
    except ServerError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo("stopped" if stopped else "not running")


@db.command()
@click.pass_context
def status(ctx: click.Context) -> None:
    """Show the server's state; exits with status 1 when it is not running or not reachable, for scripts."""
    settings = _settings(ctx)
    if not settings.uses_local_server:
        auth = (settings.neo4j_user, settings.neo4j_password.get_secret_value())
        try:
            with GraphDatabase.driver(settings.bolt_uri, auth=auth, connection_timeout=10) as driver:
                driver.verify_connectivity()
        except (DriverError, Neo4jError, OSError) as exc:
            click.echo(f"external server at {settings.bolt_uri}: not reachable ({exc})")
            ctx.exit(1)
        click.echo(f"external server at {settings.bolt_uri}: reachable")
        return
    current = LocalNeo4j(settings).status()
    _print_status(current)
    if not current.running:
        ctx.exit(1)
