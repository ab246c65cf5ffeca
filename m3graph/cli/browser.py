"""`m3graph db browser`: Neo4j Browser on loopback, connected to the local Bolt port."""

from __future__ import annotations

import time
import webbrowser

import click

from m3graph.settings import Settings


@click.command()
@click.option("--port", default=7475, show_default=True, type=int, help="Loopback HTTP port for Browser's files.")
@click.option("--fetch-only", is_flag=True, help="Fetch and verify Neo4j Browser through Maven, then exit.")
@click.option("--open/--no-open", "open_it", default=True, show_default=True, help="Open it in a web browser.")
@click.pass_obj
def browser(settings: Settings, port: int, fetch_only: bool, open_it: bool) -> None:
    """Serve Neo4j Browser (fetched from Maven Central, GPLv3, never vendored) for the memory graph."""
    from m3graph.localserver import browser as neo4j_browser
    from m3graph.localserver.server import ensure_server

    if fetch_only:
        click.echo(f"Neo4j Browser {neo4j_browser.VERSION} in {neo4j_browser.fetch(settings)}")
        return
    ensure_server(settings)
    auth = settings.neo4j_uri is not None or settings.local.auth
    server = neo4j_browser.serve(settings, port=port, auth=auth)
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
