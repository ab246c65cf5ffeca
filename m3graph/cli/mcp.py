"""`m3graph mcp`: the memory as MCP tools for agents, over stdio (default) or streamable HTTP.

Read-only unless `--allow-writes`. On HTTP a bearer token is always required (`settings.mcp_token`, i.e.
`M3GRAPH_MCP_TOKEN` or the config file, never the command line where `ps` would show it; or generated for this
launch and printed to stderr) and the
Origin and Host headers are checked; the server binds to loopback unless `--allow-remote` is given.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from m3graph.cli.guard_options import click_max_rows, click_timeout
from m3graph.settings import Settings

TOKEN_ENV = "M3GRAPH_MCP_TOKEN"


@click.command("mcp")
@click.option("--http", "http_spec", metavar="HOST:PORT", default=None,
              help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (e.g. 127.0.0.1:8766).")
@click.option("--read-only/--allow-writes", "read_only", default=True, show_default=True,
              help="Offer only reading tools, or also remember/ingest/vote/delete.")
@click.option("--files-root", "files_roots", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory whose files ingest_chat/ingest may read (repeatable; default: the working directory).")
@click.option("--celery/--in-process", "use_celery", default=False, show_default=True,
              help="The ingest tool queues videos for `m3graph worker` processes, or runs them in this process.")
@click.option("--allow-origin", "origins", multiple=True, metavar="URL",
              help="Another browser Origin allowed to call the HTTP server (repeatable).")
@click.option("--allow-host", "hosts", multiple=True, metavar="HOST:PORT",
              help="Another Host header value the HTTP server answers to (repeatable; e.g. behind a proxy).")
@click.option("--allow-remote", is_flag=True, help="Allow --http on a non-loopback interface.")
@click.option("--cypher-timeout", type=float, default=10.0, show_default=True, callback=click_timeout,
              help="read_cypher time limit, s, in (0, 300].")
@click.option("--cypher-max-rows", type=int, default=1000, show_default=True, callback=click_max_rows,
              help="read_cypher row cap, 1..100000.")
@click.pass_context
def mcp(ctx: click.Context, http_spec: str | None, read_only: bool, files_roots: tuple[Path, ...],
        use_celery: bool, origins: tuple[str, ...], hosts: tuple[str, ...], allow_remote: bool,
        cypher_timeout: float, cypher_max_rows: int) -> None:
    """Serve the memory to agents over the Model Context Protocol (stdio by default)."""
    settings: Settings = ctx.obj
    try:
        from m3graph.mcp.security import http_security, is_loopback, new_token, parse_http
        from m3graph.mcp.server import build_server
        from m3graph.mcp.service import McpService
    except ImportError as exc:
        raise click.ClickException(f"{exc}; install the MCP extra: pip install 'm3graph[mcp]'") from None
    from m3graph.cli.session import open_graph
    from m3graph.reasoning.control import controller_factory

    http = parse_http(http_spec) if http_spec else None
    if http and not is_loopback(http[0]) and not allow_remote:
        raise click.UsageError(f"--http {http_spec}: not a loopback address; add --allow-remote to serve other "
                               "machines (the bearer token is then all that guards your memory)")
    token = settings.mcp_token or (new_token() if http else None)

    graph = open_graph(settings)
    try:
        service = McpService(settings, graph, files_roots=files_roots, use_celery=use_celery,
                             cypher_timeout_s=cypher_timeout, cypher_max_rows=cypher_max_rows,
                             controller_factory=controller_factory(settings, graph))
        server = build_server(service, allow_writes=not read_only, token=token if http else None, http=http)
        if http is None:
            server.run("stdio")
            return
        host, port = http
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        click.echo(f"m3graph MCP server ({'read-only' if read_only else 'read and write'}): "
                   f"http://{netloc}/mcp", err=True)
        if settings.mcp_token is None and token is not None:
            entry = {"type": "http", "url": f"http://{netloc}/mcp",
                     "headers": {"Authorization": f"Bearer {token.get_secret_value()}"}}
            click.echo(f"bearer token for this launch (set {TOKEN_ENV} to choose your own): "
                       f"{token.get_secret_value()}", err=True)
            click.echo("client entry: " + json.dumps({"mcpServers": {"m3graph": entry}}), err=True)
        server.run("streamable-http", host=host, port=port,
                   transport_security=http_security(host, port, origins, hosts))
    finally:
        graph.close()
