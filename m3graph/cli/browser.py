"""`m3graph db browser`: Neo4j Browser on loopback (another interface only with `--allow-remote`), connected to
the local Bolt port."""

from __future__ import annotations

import time
import webbrowser

import click

from m3graph.settings import Settings, is_loopback_host


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to serve Browser's files on.")
@click.option("--port", default=7475, show_default=True, type=int, help="HTTP port for Browser's files.")
@click.option("--allow-remote", is_flag=True, help="Allow --host on a non-loopback interface.")
@click.option("--fetch-only", is_flag=True, help="Fetch and verify Neo4j Browser through Maven, then exit.")
@click.option("--open/--no-open", "open_it", default=True, show_default=True, help="Open it in a web browser.")
@click.pass_obj
def browser(settings: Settings, host: str, port: int, allow_remote: bool, fetch_only: bool, open_it: bool) -> None:
    """Serve Neo4j Browser (fetched from Maven Central, GPLv3, never vendored) for the memory graph."""
    if not allow_remote and not is_loopback_host(host):
        raise click.UsageError(f"--host {host}: not a loopback address; add --allow-remote to serve other machines "
                               "(anyone who reaches the port then gets Browser's files)")
    from m3graph.localserver import browser as neo4j_browser
    from m3graph.localserver.server import ensure_server

    if fetch_only:
        click.echo(f"Neo4j Browser {neo4j_browser.VERSION} in {neo4j_browser.fetch(settings)}")
        return
    ensure_server(settings)
    auth = settings.neo4j_uri is not None or settings.local.auth
    server = neo4j_browser.serve(settings, port=port, host=host, auth=auth)
    click.echo(f"Neo4j Browser {neo4j_browser.VERSION}: {server.url}")
    click.echo(f"connect to {settings.bolt_uri}" + (" as " + settings.neo4j_user if auth else " (no auth)"))
    if open_it:
        webbrowser.open(server.url)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
