"""`m3graph db ...`: manage the local embedded Neo4j server.

With `NEO4J_URI` set these commands leave the database alone: that server belongs to whoever runs it (docker
compose, Aura, a cluster), and m3graph only connects to it.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click
from neo4j import GraphDatabase
from neo4j.exceptions import DriverError, Neo4jError

from m3graph.cli.tables import echo_json, json_option
from m3graph.errors import ServerError
from m3graph.localserver import backup as store_copy
from m3graph.localserver.server import LocalNeo4j, ServerStatus
from m3graph.localserver.shutdown import StopProgress
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
        if status.neo4j_version is not None:
            click.echo(f"neo4j:   {status.neo4j_version}")
        if status.auth is not None:
            click.echo(f"auth:    {'on' if status.auth else 'off'}")
        if status.simd is not None:
            click.echo(f"simd:    {status.simd}")
        if status.recovered:
            click.echo("recovery: yes (the previous stop was not clean)")


def _progress(report: StopProgress) -> None:
    """One line every two seconds while a large store checkpoints: the user sees it is working, not hung."""
    cpu = f", cpu {report.cpu_s:.1f} s" if report.cpu_s is not None else ""
    idle = f", no progress for {report.idle_s:.0f} s" if report.idle_s >= 5 else ""
    click.echo(f"stopping (pid {report.pid}): {report.elapsed_s:.0f} s{cpu}{idle} | {report.last_log[:100]}")


def _local_only(settings: Settings, what: str) -> bool:
    if settings.uses_local_server:
        return True
    click.echo(f"NEO4J_URI is set: the external server at {settings.bolt_uri} is not managed here; nothing {what}.")
    return False


@click.group()
def db() -> None:
    """Build, start, stop and inspect the local Neo4j server (unused when NEO4J_URI is set)."""


@db.command()
@click.option("--force", is_flag=True, help="Rebuild even when an up-to-date build exists.")
@click.pass_context
def build(ctx: click.Context, force: bool) -> None:
    """Compile the Neo4j launcher with Maven and collect its jars (needs mvn and a JDK: 21+ for 2026.x, 17 for 5.26)."""
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
@click.option("--stall-timeout", type=float, default=None,
              help="Seconds without any shutdown progress before SIGKILL [default: local.stop_stall_s, 120]. "
                   "A server that is still checkpointing is never killed, however long it takes.")
@click.pass_context
def stop(ctx: click.Context, stall_timeout: float | None) -> None:
    """Stop the local server of this home (a clean shutdown: the store needs no recovery on the next start)."""
    settings = _settings(ctx)
    if not _local_only(settings, "stopped"):
        return
    server = LocalNeo4j(settings)
    try:
        stopped = server.stop(stall_s=stall_timeout, progress=_progress)
    except ServerError as exc:
        raise click.ClickException(str(exc)) from exc
    if not stopped:
        click.echo("not running")
        return
    report = server.last_stop
    if report is not None and not report.clean:
        raise click.ClickException(
            f"Neo4j (pid {report.pid}) stalled during shutdown and was killed after {report.seconds:.0f} s; "
            "the next start runs recovery"
        )
    click.echo(f"stopped cleanly in {report.seconds:.1f} s" if report is not None else "stopped")


@db.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.pass_context
def backup(ctx: click.Context, target: Path) -> None:
    """Copy the store to TARGET (a new or empty directory): stop cleanly, copy, start again if it was running."""
    settings = _settings(ctx)
    try:
        report = store_copy.backup(settings, target, progress=_progress)
    except ServerError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"backed up {report.source} (Neo4j {report.neo4j_line}, {report.files} files, "
               f"{report.bytes / 1e6:.1f} MB) to {report.target} in {report.seconds:.1f} s")


@db.command()
@click.argument("source", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.pass_context
def restore(ctx: click.Context, source: Path) -> None:
    """Replace the store with the backup in SOURCE; the current store is moved aside, never deleted."""
    settings = _settings(ctx)
    try:
        report = store_copy.restore(settings, source, progress=_progress)
    except ServerError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"restored {report.source} (Neo4j {report.neo4j_line}, {report.files} files) into {report.target}"
               + (" and restarted the server" if report.restarted else ""))


@db.command()
@click.option("--backup-dir", type=click.Path(path_type=Path), default=None,
              help="Where the backup taken first goes [default: <home>-backup-5.26-<time> next to the home].")
@click.pass_context
def upgrade(ctx: click.Context, backup_dir: Path | None) -> None:
    """Move a Neo4j 5.26 store to 2026.x: back it up, then open it with 2026.x (one way; restore undoes it)."""
    settings = _settings(ctx)
    try:
        report, server = store_copy.upgrade(settings, backup_dir, progress=_progress)
    except ServerError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"backup of the 5.26 store: {report.target}")
    _print_status(server.status())


@db.command()
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show the server's state; exits with status 1 when it is not running or not reachable, for scripts."""
    settings = _settings(ctx)
    if not settings.uses_local_server:
        auth = (settings.neo4j_user, settings.neo4j_password.get_secret_value())
        problem = None
        try:
            with GraphDatabase.driver(settings.bolt_uri, auth=auth, connection_timeout=10) as driver:
                driver.verify_connectivity()
        except (DriverError, Neo4jError, OSError) as exc:
            problem = str(exc)
        if as_json:
            echo_json({"bolt_uri": settings.bolt_uri, "external": True, "reachable": problem is None,
                       **({"problem": problem} if problem else {})})
        else:
            click.echo(f"external server at {settings.bolt_uri}: "
                       + (f"not reachable ({problem})" if problem else "reachable"))
        if problem:
            ctx.exit(1)
        return
    current = LocalNeo4j(settings).status()
    if as_json:
        echo_json(asdict(current))
    else:
        _print_status(current)
    if not current.running:
        ctx.exit(1)
